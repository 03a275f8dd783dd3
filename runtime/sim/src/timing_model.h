// How long PT and SFU instructions take: the cycle-approximate timing model,
// driven only by the machine description (docs/timing-model.md explains each
// term and docs/fidelity.md how the rates were fitted to hardware timings).
//  - PT: the array works in passes of pt_pass_rows rows of A; each pass costs
//    pass_rows*n*k / (sustained MAC per cycle x type factor) plus a fill cost,
//    so tiles thinner than a pass waste it.
//  - SFU: bytes / (bytes per cycle per corelet x corelets), transcendentals
//    sfu_transcendental_cost times dearer, reductions across the lanes of a
//    row sfu_row_reduce_cost times dearer plus sfu_row_reduce_row_cycles per
//    row, plus a fixed issue overhead per instruction.
//  - DMA: see dram_model.h; ring: see ring_model.h (both need state across
//    transfers).
#pragma once

#include <cstdint>

#include "spyre/isa.h"
#include "spyre/machine.h"

namespace spyre {
namespace sim {

class TimingModel {
public:
    explicit TimingModel(const MachineDescription &m);

    // Cycles of a PT or SFU instruction with evaluated fields f.
    double compute_cycles(isa::Opcode op, const int64_t *f) const;
    uint64_t matmul_macs(const int64_t *f) const;
    // Cycles of a pt.matmul at the datasheet peak of its input type (no fill, no sustained derating).
    double matmul_peak_cycles(const int64_t *f) const;

private:
    const MachineDescription &m_;
};

}  // namespace sim
}  // namespace spyre
