// Scratchpad hazards in simulated time, for one core. Every DMA transfer,
// ring transfer and PT/SFU instruction occupies the scratchpad bytes it reads
// or writes from its start until it is done with them (a load until its data
// has landed, a store until its data has left, an instruction until it
// ends). An access that starts while another unit still occupies the same
// bytes, one of the two writing, is a rule violation: the program lacks a
// wait between them, and the hardware would read or write bytes mid-transfer.
//
// The functional simulation applies each instruction whole, in issue order,
// so without this check such a program could still compute the expected
// result; with it, the timing run refuses it. Accesses of one unit never
// conflict with each other (a unit runs its stream in order).
//
// Regions are rows x planes boxes of bytes, compared exactly (row by row when
// their bounding intervals overlap). Expects accesses in non-decreasing start
// time, as the simulator's event order gives them.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace spyre {
namespace sim {

// `planes` x `rows` runs of `len` bytes: base + p * plane_stride + r * row_stride.
struct ByteBox {
    int64_t base = 0, len = 0, rows = 1, row_stride = 0, planes = 1, plane_stride = 0;
};

class HazardTracker {
public:
    static constexpr double kUntilUnknown = std::numeric_limits<double>::infinity();

    // Throws RuleViolation if `box`, accessed by `unit` from time `now`, overlaps bytes another
    // unit still occupies after `now`, one of the two writing.
    void check(int unit, const ByteBox &box, bool write, double now, const char *what);
    // The latest end of `unit`'s own writes that overlap `box` and are still occupied after `now`
    // (or `now`): when that unit's next transfer may read them.
    double own_writes_end(int unit, const ByteBox &box, double now) const;
    // Records an access until `until` (kUntilUnknown until set_until); returns its handle.
    int64_t occupy(int unit, const ByteBox &box, bool write, double until, const char *what);
    void set_until(int64_t handle, double until);
    // Forgets occupancies that end by `now` (the simulator's current event time).
    void prune(double now);
    void clear() {
        live_.clear();
        earliest_until_ = kUntilUnknown;
    }

private:
    struct Occupancy {
        int64_t handle;
        int unit;
        ByteBox box;
        bool write;
        double until;
        const char *what;
    };
    std::vector<Occupancy> live_;
    double earliest_until_ = kUntilUnknown;  // the first occupancy to end
    int64_t next_handle_ = 0;
};

// Units beyond the core's own: kRingUnit + c is the ring writing from core c into this core's scratchpad.
constexpr int kRingUnit = 100;

}  // namespace sim
}  // namespace spyre
