// Device DRAM as one shared resource for the card, in a fluid model.
//
// Every active transfer carries *card work*: bytes / peak bandwidth plus its
// share of the read/write turnaround, turnaround_ns x (min(R', W') - min(R, W))
// where R, W are the card's total bytes read and written before it and R', W'
// after it (MACHINE.md's formula, so a kernel's total work is its DRAM time at
// the peak rate). While n cores have transfers in flight the card performs
// dram_concurrency_efficiency(n) units of work per cycle: dram_one_core_fraction
// for one core, rising linearly to 1 at all cores (DRAM throughput grows with
// the number of concurrent DMA streams; measured: an elementwise add keeps
// speeding up from 4 to 32 cores). That work is shared equally
// by the active cores, and a core's share equally by its transfers.
//
// Since the efficiency is at most 1, no kernel finishes below
// MachineDescription::dram_bound_ns of its bytes.
//
// The scheduler starts transfers at their issue time and asks for the next
// completion; rates change only when a transfer starts or ends.
#pragma once

#include <cstdint>
#include <vector>

#include "spyre/machine.h"

namespace spyre {
namespace sim {

class DramModel {
public:
    explicit DramModel(const MachineDescription &m);

    // Starts a transfer of `core` at `now` (>= every earlier call's time). Returns its id.
    int64_t start(double now, int core, int64_t read_bytes, int64_t write_bytes);

    // Earliest completion among active transfers (infinity if none).
    double next_completion() const;

    // Advances to `now` (<= next_completion()) and returns the ids of transfers finished by then.
    std::vector<int64_t> complete_until(double now);

    bool idle() const { return active_.empty(); }

private:
    struct Transfer {
        int64_t id;  // 64 bits: a run may start more than 2^31 transfers (no instruction budget)
        int core;
        double work;      // remaining card-cycles
        double rate = 0;  // current card-cycles per cycle
    };
    void advance(double now);
    void recompute_rates();

    const MachineDescription &m_;
    std::vector<Transfer> active_;
    std::vector<int> per_core_;  // active transfers per core (scratch for recompute_rates)
    double now_ = 0;
    double total_read_ = 0, total_write_ = 0;
    int64_t next_id_ = 0;
};

}  // namespace sim
}  // namespace spyre
