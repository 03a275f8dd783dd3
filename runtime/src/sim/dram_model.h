// Device DRAM as one shared resource for the card, in a fluid model: every
// active transfer is served at an equal share of the card's bandwidth
// (water-filling), capped by its core's DMA port (bandwidth / saturation
// cores), so one core cannot take the whole card and two saturate it.
// Mixed read/write traffic pays the turnaround of MACHINE.md: each transfer
// carries, besides bytes / bandwidth, its increment of
// turnaround_ns x min(total read, total written), so the card's total busy
// time is exactly the DRAM roofline formula of the kernel and a kernel can
// never finish below it.
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

    // Starts a transfer at `now` (>= every earlier call's time). Returns its id.
    int start(double now, int64_t read_bytes, int64_t write_bytes);

    // Earliest completion among active transfers (infinity if none).
    double next_completion() const;

    // Advances to `now` (<= next_completion()) and returns the ids of transfers finished by then.
    std::vector<int> complete_until(double now);

    bool idle() const { return active_.empty(); }

private:
    struct Transfer {
        int id;
        double work;       // remaining card-cycles
        double cap;        // max card-cycles per cycle (port limit)
        double rate = 0;   // current card-cycles per cycle
    };
    void advance(double now);
    void recompute_rates();

    const MachineDescription &m_;
    std::vector<Transfer> active_;
    std::vector<Transfer *> order_;  // scratch for recompute_rates
    double now_ = 0;
    double total_read_ = 0, total_write_ = 0;
    int next_id_ = 0;
};

}  // namespace sim
}  // namespace spyre
