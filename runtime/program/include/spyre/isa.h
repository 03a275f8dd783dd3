// C++ view of the instruction set defined in isa.def: opcodes, units, field
// kinds, per-opcode field indices, the Instruction value type and the table
// lookups every tool uses. Nothing here knows an opcode by hand: all of it is
// generated from isa.def.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "spyre/dtype.h"

namespace spyre {
namespace isa {

constexpr int kMaxLoopDepth = 4;  // affine operands carry one stride per loop level
constexpr int kMaxFields = 16;

enum class Unit : uint8_t { Any = 255, Dma = 0, Pt = 1, Sfu = 2 };
constexpr int kNumUnits = 3;
const char *unit_name(Unit u);

enum class CostClass : uint8_t { Control, Dma, Ring, Matmul, SfuSimple, SfuTranscendental, SfuReduce, SfuRowReduce };
// A reduction (accumulates into its destination): column-wise or row-wise.
inline bool is_reduction(CostClass c) { return c == CostClass::SfuReduce || c == CostClass::SfuRowReduce; }

enum OpcodeFlags : uint32_t { FloatOnly = 1 };

enum class FieldKind : uint8_t {
#define SPYRE_FIELD_KIND(kind, bytes, lo, hi, meaning) kind,
#include "spyre/isa.def"
#undef SPYRE_FIELD_KIND
};

struct FieldKindSpec {
    FieldKind kind;
    const char *name;
    int encoded_bytes;  // 0: affine operand
    int64_t min, max;
    const char *meaning;
};
const FieldKindSpec &field_kind_spec(FieldKind k);

enum class Opcode : uint16_t {
#define F(name, kind)
#define SPYRE_OPCODE(name, mnemonic, unit, cost, flags, fields) name,
#include "spyre/isa.def"
#undef SPYRE_OPCODE
#undef F
    NumOpcodes
};
constexpr int kNumOpcodes = static_cast<int>(Opcode::NumOpcodes);

// Field indices per opcode: isa::field::DmaLoad::sp, isa::field::Matmul::k, ...
namespace field {
#define F(name, kind) name,
#define SPYRE_OPCODE(opname, mnemonic, unit, cost, flags, fields) \
    namespace opname {                                            \
    enum : int { fields kNumFields };                             \
    }
#include "spyre/isa.def"
#undef SPYRE_OPCODE
#undef F
}  // namespace field

struct FieldSpec {
    const char *name;
    FieldKind kind;
};

struct OpcodeSpec {
    Opcode opcode;
    const char *mnemonic;
    Unit unit;
    CostClass cost;
    uint32_t flags;
    const FieldSpec *fields;
    int num_fields;
};

const OpcodeSpec &opcode_spec(Opcode op);
// nullptr when no opcode has this mnemonic.
const OpcodeSpec *find_opcode(const std::string &mnemonic);
bool is_affine(FieldKind k);

// One operand: a constant, or for affine kinds base + sum(stride[d] * L_d).
struct Operand {
    int64_t base = 0;
    std::array<int32_t, kMaxLoopDepth> stride{};

    int64_t eval(const int64_t *loop_index) const {
        return base + stride[0] * loop_index[0] + stride[1] * loop_index[1] + stride[2] * loop_index[2] +
               stride[3] * loop_index[3];
    }
    bool is_constant() const { return stride[0] == 0 && stride[1] == 0 && stride[2] == 0 && stride[3] == 0; }
    bool operator==(const Operand &o) const { return base == o.base && stride == o.stride; }
};

struct Instruction {
    Opcode op = Opcode::EndLoop;
    std::array<Operand, kMaxFields> f{};
    uint64_t file_offset = 0;  // where the decoder found it; 0 for instructions built in memory

    int64_t operator[](int i) const { return f[i].base; }
    Operand &operand(int i) { return f[i]; }
    const Operand &operand(int i) const { return f[i]; }
    bool operator==(const Instruction &o) const { return op == o.op && f == o.f; }
};

// Convenience builder: Instruction with the given constant field values in table order.
Instruction make_instruction(Opcode op, std::initializer_list<int64_t> values);

}  // namespace isa
}  // namespace spyre
