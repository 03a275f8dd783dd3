// Reuse of the overlap between consecutive staged tiles (see tile_overlap_reuse.h).
#include "tile_overlap_reuse.h"

#include <algorithm>

namespace spyre {
namespace compiler {

namespace {

namespace L = isa::field::DmaLoad;
namespace C = isa::field::Copy;

bool same_coefficients(const SymOperand &a, const SymOperand &b) {
    const size_t n = std::max(a.coef.size(), b.coef.size());
    for (size_t d = 0; d < n; d++) {
        if (a.coef_at(d) != b.coef_at(d)) return false;
    }
    return true;
}

SymOperand constant(int64_t v) {
    SymOperand o;
    o.base = v;
    return o;
}

// One contiguous run: a single row and plane, every byte valid, the same in every iteration.
bool is_single_run(const SymInstruction &in) {
    if (in.op != isa::Opcode::DmaLoad) return false;
    for (int f : {(int)L::row_bytes, (int)L::valid_bytes, (int)L::rows, (int)L::valid_rows, (int)L::planes,
                  (int)L::valid_planes}) {
        if (in.f[f].depends_on_loops()) return false;
    }
    return in.f[L::rows].base == 1 && in.f[L::planes].base == 1 &&
           in.f[L::valid_rows].base == 1 && in.f[L::valid_planes].base == 1 &&
           in.f[L::valid_bytes].base == in.f[L::row_bytes].base && in.ring.role == RingShare::Role::None;
}

}  // namespace

bool reuse_tile_overlap(ProgramNode &load, const ProgramNode &previous, int64_t stick_bytes, int64_t max_lanes,
                        ProgramNode *copy) {
    if (load.kind != ProgramNode::Kind::Instruction || previous.kind != ProgramNode::Kind::Instruction) return false;
    SymInstruction &in = load.inst;
    const SymInstruction &prev = previous.inst;
    if (!is_single_run(in) || !is_single_run(prev)) return false;
    if (in.f[L::arg].base != prev.f[L::arg].base || in.f[L::row_bytes].base != prev.f[L::row_bytes].base) return false;
    if (!same_coefficients(in.f[L::dram], prev.f[L::dram]) || !same_coefficients(in.f[L::sp], prev.f[L::sp])) {
        return false;
    }
    const int64_t bytes = in.f[L::row_bytes].base;
    const int64_t step = in.f[L::dram].base - prev.f[L::dram].base;  // how far the tile moved
    if (step <= 0 || step >= bytes || step % stick_bytes != 0) return false;
    const int64_t overlap = bytes - step;  // the previous tile's last bytes, this tile's first
    const int64_t words = overlap / 4;
    if (overlap % 4 != 0) return false;

    // The copy: rows of n 4-byte words, n the largest divisor of the word count within max_lanes.
    int64_t n = std::min<int64_t>(words, std::max<int64_t>(1, max_lanes));
    while (words % n != 0) n--;
    SymInstruction c;
    c.op = isa::Opcode::Copy;
    c.f[C::dst] = in.f[L::sp];
    c.f[C::dst_stride] = constant(n * 4);
    c.f[C::a] = prev.f[L::sp];
    c.f[C::a].base += step;
    c.f[C::a_stride] = constant(n * 4);
    c.f[C::a_mode] = constant(0);
    c.f[C::n] = constant(n);
    c.f[C::rows] = constant(words / n);
    c.f[C::type] = constant((int64_t)DType::I32);
    c.f[C::imm] = constant(0);
    c.func = in.func;
    c.copies_staged_overlap = true;
    *copy = ProgramNode::instruction(c);

    // The load: the bytes past the previous tile's end only.
    in.f[L::sp].base += overlap;
    in.f[L::dram].base += overlap;
    in.f[L::row_bytes].base = step;
    in.f[L::valid_bytes].base = step;  // one row: its strides (>= the old row) stay as they were
    return true;
}

}  // namespace compiler
}  // namespace spyre
