// How long instructions take: the cycle-approximate timing model, driven only
// by the machine description (docs/timing-model.md explains each term).
//  - PT: the array works in passes of pt_pass_rows rows of A; each pass costs
//    pass_rows*n*k / (peak MAC per cycle x type factor) plus a fill cost, so
//    tiles thinner than a pass waste it.
//  - SFU: bytes / (bytes per cycle per corelet x corelets), transcendentals
//    sfu_transcendental_cost times dearer, plus a fixed issue overhead.
//  - DMA: device DRAM is one resource for the card (bandwidth, plus the
//    read/write turnaround term of MACHINE.md); one core's transfer is also
//    limited by its DMA port (card bandwidth / dram_saturation_cores) and
//    pays the access latency.
//  - Ring: see ring_model.h (link reservations need state across transfers).
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

    // A DMA transfer issued at `start` that reads and writes these DRAM bytes
    // and fills `local_bytes` of scratchpad with zeros; returns its end time.
    double dram_transfer(double start, int64_t read_bytes, int64_t write_bytes, int64_t local_bytes);

private:
    const MachineDescription &m_;
    double dram_free_at_ = 0;
    double total_read_ = 0, total_write_ = 0;
};

}  // namespace sim
}  // namespace spyre
