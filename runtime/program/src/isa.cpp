// The lookup tables generated from isa.def.
#include "spyre/isa.h"

#include <map>

#include "spyre/error.h"

namespace spyre {
namespace isa {

const char *unit_name(Unit u) {
    switch (u) {
    case Unit::Dma: return "dma";
    case Unit::Pt: return "pt";
    case Unit::Sfu: return "sfu";
    case Unit::Any: return "any";
    }
    return "?";
}

namespace {
const FieldKindSpec kFieldKinds[] = {
#define SPYRE_FIELD_KIND(kind, bytes, lo, hi, meaning) {FieldKind::kind, #kind, bytes, lo, hi, meaning},
#include "spyre/isa.def"
#undef SPYRE_FIELD_KIND
};

#define F(name, kind) {#name, FieldKind::kind},
#define SPYRE_OPCODE(opname, mnemonic, unit, cost, flags, fields) \
    const FieldSpec kFields_##opname[] = {fields{nullptr, FieldKind::Arg}};
#include "spyre/isa.def"
#undef SPYRE_OPCODE
#undef F

const OpcodeSpec kOpcodes[] = {
#define F(name, kind)
#define SPYRE_OPCODE(opname, mnemonic, unit, cost, flags, fields)                              \
    {Opcode::opname, mnemonic, Unit::unit, CostClass::cost, (flags), kFields_##opname, \
     field::opname::kNumFields},
#include "spyre/isa.def"
#undef SPYRE_OPCODE
#undef F
};

static_assert(sizeof(kOpcodes) / sizeof(kOpcodes[0]) == kNumOpcodes, "opcode table out of sync");
}  // namespace

const FieldKindSpec &field_kind_spec(FieldKind k) { return kFieldKinds[static_cast<int>(k)]; }

const OpcodeSpec &opcode_spec(Opcode op) { return kOpcodes[static_cast<int>(op)]; }

const OpcodeSpec *find_opcode(const std::string &mnemonic) {
    static const std::map<std::string, const OpcodeSpec *> by_name = [] {
        std::map<std::string, const OpcodeSpec *> m;
        for (const auto &s : kOpcodes) m[s.mnemonic] = &s;
        return m;
    }();
    auto it = by_name.find(mnemonic);
    return it == by_name.end() ? nullptr : it->second;
}

bool is_affine(FieldKind k) { return field_kind_spec(k).encoded_bytes == 0; }

Instruction make_instruction(Opcode op, std::initializer_list<int64_t> values) {
    const OpcodeSpec &spec = opcode_spec(op);
    if ((int)values.size() != spec.num_fields) {
        throw Error(std::string("make_instruction(") + spec.mnemonic + "): expected " +
                    std::to_string(spec.num_fields) + " fields, got " + std::to_string(values.size()));
    }
    Instruction inst;
    inst.op = op;
    int i = 0;
    for (int64_t v : values) inst.f[i++].base = v;
    return inst;
}

}  // namespace isa
}  // namespace spyre
