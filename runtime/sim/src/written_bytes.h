// The scratchpad bytes of one core that some instruction has written: the
// state behind poison tracking (a read of a byte never written is a rule
// violation). The timing phase keeps it, in simulated-time order, so timing-
// only runs, functional runs and the compiler's dry run (target/checks/dry_run.h)
// report the same reads of unwritten bytes.
//
// A set of disjoint, non-adjacent half-open intervals. Bytes stay written
// until the scratchpad is reset, so the set only grows and its intervals
// merge: a program that stages tiles into a few buffers quickly reaches a
// handful of intervals, and the common checks (the box's bounding interval
// inside one written interval) cost one lookup. Boxes are rows x planes runs
// (ByteBox, hazard_tracker.h); one that does not fall inside one interval is
// checked or marked run by run.
#pragma once

#include <cstdint>
#include <map>

#include "hazard_tracker.h"

namespace spyre {
namespace sim {

class WrittenBytes {
public:
    // The first byte of [lo, hi) not written, or -1 when all of it is.
    int64_t first_unwritten(int64_t lo, int64_t hi) const;
    // The first byte of the box not written, or -1.
    int64_t first_unwritten(const ByteBox &box) const;
    void mark(int64_t lo, int64_t hi);
    void mark(const ByteBox &box);
    void clear() { runs_.clear(); }
    size_t interval_count() const { return runs_.size(); }

private:
    std::map<int64_t, int64_t> runs_;  // start -> end, disjoint and non-adjacent
};

}  // namespace sim
}  // namespace spyre
