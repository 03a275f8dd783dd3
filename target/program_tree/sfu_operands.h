// The operand fields of an SFU instruction, by name, for the passes that
// rewrite SFU instructions (sfu_row_blocking.cpp, sfu_copy_forwarding.cpp):
// each operand's address, row stride and mode fields and its element size,
// and the n and rows fields. The ISA (spyre/isa.def) names them dst, a, b, c,
// <op>_stride and <op>_mode; a cast's destination has its own type.
#pragma once

#include <string>
#include <vector>

#include "program_tree/program_tree.h"
#include "spyre/isa.h"
#include "spyre/dtype.h"

namespace spyre {
namespace compiler {

struct SfuOperands {
    struct Operand {
        int addr, stride, mode;  // field indices; mode -1: always a vector (the destination)
        int64_t elem_bytes;
        bool write;
    };
    std::vector<Operand> ops;  // the destination first
    int n = -1, rows = -1;
};

// Fills `out` for an elementwise SFU instruction; false for other units and for reductions.
inline bool sfu_operands(const SymInstruction &in, SfuOperands *out) {
    const isa::OpcodeSpec &spec = isa::opcode_spec(in.op);
    if (spec.unit != isa::Unit::Sfu || isa::is_reduction(spec.cost)) return false;
    auto idx = [&](const std::string &name) {
        for (int i = 0; i < spec.num_fields; i++) {
            if (name == spec.fields[i].name) return i;
        }
        return -1;
    };
    out->n = idx("n");
    out->rows = idx("rows");
    const int type = idx("type");
    out->ops.clear();
    for (const char *name : {"dst", "a", "b", "c"}) {
        const int a = idx(name);
        if (a < 0) continue;
        const std::string s = name;
        int64_t eb = dtype_bytes((DType)in.f[type].base);
        if (in.op == isa::Opcode::Cast && s == "dst") eb = dtype_bytes((DType)in.f[isa::field::Cast::dst_type].base);
        out->ops.push_back({a, idx(s + "_stride"), s == "dst" ? -1 : idx(s + "_mode"), eb, s == "dst"});
    }
    return true;
}

// 0: a vector per row, 1: one scalar per row, >= 2: an immediate or a run-time parameter.
inline int64_t mode_of(const SymInstruction &in, const SfuOperands::Operand &o) {
    return o.mode < 0 ? 0 : in.f[o.mode].base;
}

}  // namespace compiler
}  // namespace spyre
