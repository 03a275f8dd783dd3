// The cycle-approximate timing model (see timing_model.h).
#include "timing_model.h"

#include <algorithm>
#include <array>
#include <string>
#include <cmath>

namespace spyre {
namespace sim {

TimingModel::TimingModel(const MachineDescription &m) : m_(m) {}

uint64_t TimingModel::matmul_macs(const int64_t *f) const {
    namespace F = isa::field::Matmul;
    return (uint64_t)f[F::m] * (uint64_t)f[F::n] * (uint64_t)f[F::k];
}

double TimingModel::matmul_peak_cycles(const int64_t *f) const {
    const DType t = (DType)f[isa::field::Matmul::in_type];
    return (double)matmul_macs(f) / (m_.pt_peak_macs_per_cycle_fp16 * m_.pt_rate_factor(t));
}

double TimingModel::compute_cycles(isa::Opcode op, const int64_t *f) const {
    const isa::OpcodeSpec &spec = isa::opcode_spec(op);
    if (op == isa::Opcode::Matmul) {
        namespace F = isa::field::Matmul;
        const DType t = (DType)f[F::in_type];
        return m_.pt_matmul_cycles((double)f[F::m], (double)f[F::n], (double)f[F::k], m_.pt_rate_factor(t));
    }
    // SFU: bytes moved through the vector unit of both corelets.
    int64_t n = 0, rows = 0, eb = 0;
    if (op == isa::Opcode::Cast) {
        namespace F = isa::field::Cast;
        n = f[F::n];
        rows = f[F::rows];
        eb = std::max(dtype_bytes((DType)f[F::type]), dtype_bytes((DType)f[F::dst_type]));
    } else {
        // Every other SFU format has fields named n, rows and type; find them once per opcode.
        static const auto index_of = [] {
            std::array<std::array<int, 3>, isa::kNumOpcodes> t{};
            for (int o = 0; o < isa::kNumOpcodes; o++) {
                const isa::OpcodeSpec &s = isa::opcode_spec((isa::Opcode)o);
                t[o] = {0, 0, 0};
                for (int i = 0; i < s.num_fields; i++) {
                    const std::string name = s.fields[i].name;
                    if (name == "n") t[o][0] = i;
                    if (name == "rows") t[o][1] = i;
                    if (name == "type") t[o][2] = i;
                }
            }
            return t;
        }();
        const auto &ix = index_of[(int)op];
        const int in = ix[0], ir = ix[1], it = ix[2];
        n = f[in];
        rows = f[ir];
        eb = dtype_bytes((DType)f[it]);
    }
    using SfuCost = MachineDescription::SfuCost;
    const SfuCost cost = spec.cost == isa::CostClass::SfuTranscendental ? SfuCost::Transcendental
                         : spec.cost == isa::CostClass::SfuRowReduce    ? SfuCost::RowReduce
                                                                        : SfuCost::Simple;
    return m_.sfu_instruction_cycles((double)n, (double)rows, (double)eb, cost);
}

}  // namespace sim
}  // namespace spyre
