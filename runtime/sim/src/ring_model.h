// The on-chip ring as a timed resource: a bidirectional ring of `cores`
// nodes, ring_bytes_per_cycle per link and direction (MACHINE.md, P). A
// ring.put from core s to core d takes the shorter direction (clockwise on a
// tie) and occupies every link on its path for bytes / ring_bytes_per_cycle
// cycles (cut-through: the links are reserved together, so two transfers that
// share a link in the same direction serialize, transfers on disjoint links
// or in opposite directions do not). The data arrives hops x hop latency
// after the last byte leaves (at least one hop: a message to the own core
// still goes through the ring interface). Zero-byte puts (credits) occupy no
// link and pay only the latency.
//
// Reservations are made in the simulator's event order, which is close to but
// not exactly the order of their start times (a put waits for its unit's
// landing bytes): a reservation never moves an earlier one, so a put reserved
// late may queue behind one that starts after it. That errs on the slow side.
#pragma once

#include <cstdint>
#include <vector>

#include "spyre/machine.h"

namespace spyre {
namespace sim {

class RingModel {
public:
    explicit RingModel(const MachineDescription &m);

    struct Span {
        double begin = 0;  // first byte leaves the sender
        double end = 0;    // last byte has arrived at the receiver
        double busy = 0;   // cycles the path's links (and the sender's DMA unit) are occupied
    };

    // Reserves the path from `src` to `dst` for `bytes` starting no earlier than `earliest`.
    // `scale` multiplies the durations (random-latency mode).
    Span reserve(double earliest, int src, int dst, int64_t bytes, double scale = 1.0);

    // Ring distance (hops) between two cores.
    int hops(int src, int dst) const;

private:
    const MachineDescription &m_;
    int n_;
    std::vector<double> free_cw_, free_ccw_;  // link i: i -> i+1 (clockwise), i -> i-1 (counter-clockwise)
};

}  // namespace sim
}  // namespace spyre
