// Semantic checks of a program (see validator.h).
#include "spyre/validator.h"

#include <set>
#include <sstream>

#include "spyre/error.h"

namespace spyre {

namespace {

std::string hex(uint64_t v) {
    std::ostringstream os;
    os << "0x" << std::hex << v;
    return os.str();
}

struct StreamContext {
    int core;
    isa::Unit unit;
    size_t index;
    const isa::Instruction *inst;
};

[[noreturn]] void reject(const StreamContext &c, const std::string &msg) {
    std::ostringstream os;
    os << "offset " << c.inst->file_offset << " (core " << c.core << ", " << isa::unit_name(c.unit) << " instruction "
       << c.index << ", " << isa::opcode_spec(c.inst->op).mnemonic << "): " << msg;
    throw Error(os.str());
}

void validate_stream(const Program &p, const MachineDescription &m, const ValidationLimits &limits, int core,
                     isa::Unit unit, const std::vector<isa::Instruction> &stream) {
    std::vector<uint64_t> trips;  // open loops
    uint64_t multiplier = 1;      // product of open trip counts
    uint64_t dynamic = 0;
    for (size_t i = 0; i < stream.size(); i++) {
        const isa::Instruction &inst = stream[i];
        StreamContext ctx{core, unit, i, &inst};
        const isa::OpcodeSpec &spec = isa::opcode_spec(inst.op);
        if (spec.unit != isa::Unit::Any && spec.unit != unit) {
            reject(ctx, std::string("belongs to the ") + isa::unit_name(spec.unit) + " unit, found in the " +
                            isa::unit_name(unit) + " stream");
        }
        for (int fi = 0; fi < spec.num_fields; fi++) {
            const isa::FieldSpec &fs = spec.fields[fi];
            const isa::FieldKindSpec &ks = isa::field_kind_spec(fs.kind);
            const isa::Operand &o = inst.f[fi];
            if (o.base < ks.min || o.base > ks.max) {
                reject(ctx, std::string("field '") + fs.name + "' = " + std::to_string(o.base) + " out of range [" +
                                std::to_string(ks.min) + ", " + std::to_string(ks.max) + "]");
            }
            for (int d = 0; d < isa::kMaxLoopDepth; d++) {
                if (o.stride[d] != 0 && d >= (int)trips.size()) {
                    reject(ctx, std::string("field '") + fs.name + "' uses loop index L" + std::to_string(d) + " but only " +
                                    std::to_string(trips.size()) + " loop(s) are open");
                }
            }
            int64_t v = o.base;
            switch (fs.kind) {
            case isa::FieldKind::Arg:
                if (v >= (int64_t)p.args.size()) {
                    reject(ctx, "references argument " + std::to_string(v) + " but the program has " +
                                    std::to_string(p.args.size()));
                }
                break;
            case isa::FieldKind::Type:
                if (v >= kNumDTypes) reject(ctx, std::string("field '") + fs.name + "': unknown type " + std::to_string(v));
                break;
            case isa::FieldKind::Core:
                if (v >= m.cores) reject(ctx, "core " + std::to_string(v) + " does not exist (machine has " + std::to_string(m.cores) + ")");
                break;
            case isa::FieldKind::Channel:
                if (v >= m.token_channels_per_core) {
                    reject(ctx, "token channel " + std::to_string(v) + " does not exist (machine has " +
                                    std::to_string(m.token_channels_per_core) + " per core)");
                }
                break;
            case isa::FieldKind::BarrierId:
                if (v >= m.barrier_ids) {
                    reject(ctx, "barrier id " + std::to_string(v) + " does not exist (machine has " + std::to_string(m.barrier_ids) + ")");
                }
                break;
            case isa::FieldKind::TripCount:
                if (v > m.max_loop_trip_count) {
                    reject(ctx, "loop trip count " + std::to_string(v) + " exceeds the hardware limit " +
                                    std::to_string(m.max_loop_trip_count));
                }
                break;
            default: break;
            }
        }
        // Operand modes that read a run-time parameter must name an existing one.
        for (int fi = 0; fi < spec.num_fields; fi++) {
            if (spec.fields[fi].kind == isa::FieldKind::Mode && inst.f[fi].base == 3) {
                int imm = -1;
                for (int fj = 0; fj < spec.num_fields; fj++) {
                    if (spec.fields[fj].kind == isa::FieldKind::Imm) imm = fj;
                }
                if (imm < 0 || inst.f[imm].base >= (int64_t)p.params.size()) {
                    reject(ctx, "operand reads run-time parameter " + std::to_string(imm < 0 ? -1 : inst.f[imm].base) +
                                    " but the program has " + std::to_string(p.params.size()));
                }
            }
        }
        if (spec.flags & isa::FloatOnly) {
            for (int fi = 0; fi < spec.num_fields; fi++) {
                if (spec.fields[fi].kind == isa::FieldKind::Type && !dtype_is_float((DType)inst.f[fi].base)) {
                    reject(ctx, std::string("is defined for f32 and f16 only, got ") + dtype_name((DType)inst.f[fi].base));
                }
            }
        }
        switch (inst.op) {
        case isa::Opcode::Loop:
            if ((int64_t)trips.size() >= m.max_loop_depth) {
                reject(ctx, "loop nesting deeper than the machine's max_loop_depth " + std::to_string(m.max_loop_depth));
            }
            trips.push_back(inst[0]);
            multiplier *= inst[0];
            break;
        case isa::Opcode::EndLoop:
            if (trips.empty()) reject(ctx, "endloop without a matching loop");
            multiplier /= trips.back();
            trips.pop_back();
            break;
        case isa::Opcode::DmaStore:
            if (p.args[inst[isa::field::DmaStore::arg]].kind == ArgKind::Input) {
                reject(ctx, "stores into input argument '" + p.args[inst[isa::field::DmaStore::arg]].name + "'");
            }
            break;
        case isa::Opcode::DmaLoad: {
            using namespace isa::field::DmaLoad;
            if (inst[valid_bytes] > inst[row_bytes] || inst[valid_rows] > inst[rows] || inst[valid_planes] > inst[planes]) {
                reject(ctx, "valid_bytes/valid_rows/valid_planes must not exceed row_bytes/rows/planes");
            }
            break;
        }
        case isa::Opcode::Matmul: {
            // The type combinations of the PT: f16 or f32 A and B into an f32 C, i8 A and B
            // into an i32 C (the C type follows from in_type). Every address and stride of
            // an operand is a whole number of its elements.
            namespace F = isa::field::Matmul;
            const DType t = (DType)inst[F::in_type];
            if (t == DType::I32) {
                reject(ctx, "in_type must be f16, f32 or i8 (f16 and f32 accumulate into an f32 C, i8 into an i32 C), not i32");
            }
            auto aligned = [&](int field, int64_t bytes, const char *what) {
                const isa::Operand &o = inst.f[field];
                bool ok = o.base % bytes == 0;
                for (int d = 0; d < isa::kMaxLoopDepth; d++) ok = ok && o.stride[d] % bytes == 0;
                if (!ok) {
                    reject(ctx, std::string("field '") + spec.fields[field].name + "' is not a whole number of " + what +
                                    " elements (" + std::to_string(bytes) + " bytes)");
                }
            };
            const char *acc = t == DType::I8 ? "i32" : "f32";
            aligned(F::c, 4, acc);
            aligned(F::ldc, 4, acc);
            for (int fi : {(int)F::a, (int)F::lda, (int)F::b, (int)F::ldb}) aligned(fi, dtype_bytes(t), dtype_name(t));
            break;
        }
        default: break;
        }
        dynamic += multiplier;
        if (dynamic > limits.max_dynamic_instructions_per_stream) {
            reject(ctx, "the stream executes more than " + std::to_string(limits.max_dynamic_instructions_per_stream) +
                            " instructions (loops expanded); refusing to simulate it");
        }
    }
    if (!trips.empty()) {
        std::ostringstream os;
        os << "core " << core << ", " << isa::unit_name(unit) << " stream: " << trips.size()
           << " loop(s) not closed by endloop at the end of the stream";
        if (!stream.empty()) os << " (last instruction at offset " << stream.back().file_offset << ")";
        throw Error(os.str());
    }
}

}  // namespace

void validate_program(const Program &p, const MachineDescription &m, const ValidationLimits &limits) {
    if (p.machine_fingerprint != m.structural_fingerprint()) {
        throw Error("program '" + p.kernel_name + "' was built for machine fingerprint " + hex(p.machine_fingerprint) +
                    ", this machine (" + m.name + ") has " + hex(m.structural_fingerprint()) +
                    "; recompile it for this machine description");
    }
    if ((int64_t)p.cores.size() != m.cores) {
        throw Error("program '" + p.kernel_name + "' has streams for " + std::to_string(p.cores.size()) +
                    " cores, the machine has " + std::to_string(m.cores));
    }
    std::set<std::string> names;
    for (size_t i = 0; i < p.args.size(); i++) {
        const auto &a = p.args[i];
        if (!names.insert(a.name).second) throw Error("argument " + std::to_string(i) + ": duplicate name '" + a.name + "'");
        check_layout(a.shape, a.layout, m.stick_bytes, "argument '" + a.name + "'");
        LayoutAddressing addr = layout_addressing(a.shape, a.layout, m.stick_bytes);
        if (addr.total_bytes > m.dram_usable_bytes) {
            throw Error("argument '" + a.name + "' needs " + std::to_string(addr.total_bytes) +
                        " bytes of device DRAM, the machine has " + std::to_string(m.dram_usable_bytes));
        }
    }
    for (size_t i = 0; i < p.params.size(); i++) {
        if (!names.insert(p.params[i].name).second) {
            throw Error("parameter " + std::to_string(i) + ": duplicate name '" + p.params[i].name + "'");
        }
    }
    for (size_t c = 0; c < p.cores.size(); c++) {
        for (int u = 0; u < isa::kNumUnits; u++) {
            validate_stream(p, m, limits, (int)c, (isa::Unit)u, p.cores[c].unit[u]);
        }
    }
}

}  // namespace spyre
