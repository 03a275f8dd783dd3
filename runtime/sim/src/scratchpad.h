// One core's scratchpad as the simulator sees it: the bytes (functional runs),
// and for the timing phase the hazard context and the written bytes (poison
// tracking: a read of a byte never written is a rule violation; the timing
// phase checks it, so timing-only and functional runs report the same reads).
// Memory is obtained zeroed from the OS on first touch (calloc), so
// simulating 32 cores costs only the bytes a program uses. Address checks
// throw RuleViolation; the caller adds the core/unit/instruction context.
#pragma once

#include <new>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "hazard_tracker.h"
#include "written_bytes.h"
#include "spyre/error.h"

namespace spyre {
namespace sim {

// A broken hardware rule, without context; the scheduler wraps it.
class RuleViolation : public Error {
public:
    explicit RuleViolation(const std::string &w) : Error(w) {}
};

// A read of scratchpad bytes no instruction has written: `byte` is the first
// such byte, `operand_start` where the run being read starts (so the caller
// can name the buffer the operand points into).
class UnwrittenRead : public RuleViolation {
public:
    UnwrittenRead(const std::string &w, int64_t byte, int64_t operand_start)
        : RuleViolation(w), byte(byte), operand_start(operand_start) {}
    int64_t byte;
    int64_t operand_start;
};

// How an instruction uses an operand's bytes (for the hazard check).
enum class Access { Read, Write };
// Whether check_box also does the poison check (Skip: the caller checks row by row).
enum class Poison { Check, Skip };

// Who is checking operands now, and until when they stay occupied (hazard_tracker.h).
struct HazardContext {
    HazardTracker *tracker = nullptr;
    int unit = 0;
    double now = 0;
    double until = 0;                      // HazardTracker::kUntilUnknown for a transfer in flight
    std::vector<int64_t> *handles = nullptr;  // receives the occupancies' handles when set
};

class Scratchpad {
public:
    // `functional`: hold the bytes. `track_poison`: keep the written bytes and refuse reads of
    // others (the timing phase's scratchpads; functional ones need not, the timing phase already did).
    Scratchpad(int64_t bytes, bool functional, bool track_poison) : size_(bytes), track_poison_(track_poison) {
        if (functional) data_.reset(static_cast<uint8_t *>(std::calloc(bytes, 1)));
        if (functional && !data_) throw std::bad_alloc();  // host memory: spyre_error_out_of_memory, the kernel named
    }
    Scratchpad(Scratchpad &&o) noexcept
        : size_(o.size_), track_poison_(o.track_poison_), high_water_(o.high_water_.load(std::memory_order_relaxed)),
          hazard_(o.hazard_), data_(std::move(o.data_)), written_(std::move(o.written_)) {}

    int64_t size() const { return size_; }
    uint8_t *data() { return data_.get(); }

    void check_bounds(int64_t addr, int64_t len, const char *what) const {
        if (addr < 0 || len < 0 || addr > size_ || len > size_ - addr) {
            throw RuleViolation(std::string(what) + " [" + std::to_string(addr) + ", " + std::to_string(addr + len) +
                                ") is outside the core's own " + std::to_string(size_) + "-byte scratchpad");
        }
    }
    // Bounds of `rows` x `planes` runs of `len` bytes: the extreme runs are actual
    // runs, so checking the bounding interval is exact and O(1).
    // With a hazard context set, the box is also checked against the bytes other units still
    // occupy, then occupied itself. With poison tracking, a read must be of written bytes and a
    // write marks its bytes written (the whole box read before the whole box is written; callers
    // whose rows depend on earlier rows pass Poison::Skip and check row by row).
    void check_box(int64_t base, int64_t len, int64_t rows, int64_t row_stride, int64_t planes, int64_t plane_stride,
                   const char *what, Access access = Access::Read, Poison poison = Poison::Check) {
        const int64_t lo = base + std::min<int64_t>(0, (rows - 1) * row_stride) + std::min<int64_t>(0, (planes - 1) * plane_stride);
        const int64_t hi = base + std::max<int64_t>(0, (rows - 1) * row_stride) + std::max<int64_t>(0, (planes - 1) * plane_stride) + len;
        check_bounds(lo, hi - lo, what);
        if (len <= 0 || rows <= 0 || planes <= 0) return;
        const ByteBox box{base, len, rows, row_stride, planes, plane_stride};
        const bool write = access == Access::Write;
        if (hazard_ && hazard_->tracker) {
            hazard_->tracker->check(hazard_->unit, box, write, hazard_->now, what);
            const int64_t h = hazard_->tracker->occupy(hazard_->unit, box, write, hazard_->until, what);
            if (hazard_->handles) hazard_->handles->push_back(h);
        }
        if (!track_poison_ || poison == Poison::Skip) return;
        if (write) {
            written_.mark(box);
        } else {
            require_written(box, what);
        }
    }
    // Marks a box written (poison tracking only; no bounds or hazard check).
    void mark_written(const ByteBox &box) {
        if (track_poison_) written_.mark(box);
    }
    // The hazard context for the next check_box calls (nullptr: bounds only).
    void set_hazard_context(const HazardContext *c) { hazard_ = c; }
    // Poison check of a box read without occupying it (an accumulator read and rewritten
    // by the same instruction, whose write check_box covers the hazards).
    void require_written(const ByteBox &box, const char *what) const {
        if (!track_poison_) return;
        const int64_t hole = written_.first_unwritten(box);
        if (hole < 0) return;
        // The run the hole is in, so the error can name the buffer the operand points into.
        int64_t start = box.base;
        for (int64_t p = 0; p < box.planes; p++) {
            for (int64_t r = 0; r < box.rows; r++) {
                const int64_t s = box.base + p * box.plane_stride + r * box.row_stride;
                if (hole >= s && hole < s + box.len) start = s;
            }
        }
        throw UnwrittenRead(std::string(what) + " reads scratchpad byte " + std::to_string(hole) +
                                " which was never written (uninitialised data)",
                            hole, start);
    }
    // Bounds plus poison check for a read of one run.
    void check_read(int64_t addr, int64_t len, const char *what) const {
        check_bounds(addr, len, what);
        if (len > 0) require_written(ByteBox{addr, len}, what);
    }
    void check_write(int64_t addr, int64_t len, const char *what) {
        check_bounds(addr, len, what);
        if (track_poison_ && len > 0) written_.mark(addr, addr + len);
        raise_high_water(addr + len);
    }

    // Back to the state of a fresh scratchpad (all zero, nothing written), touching
    // only the bytes a run wrote, so a pooled scratchpad is cheap to reuse.
    void reset() {
        const int64_t end = high_water_.load(std::memory_order_relaxed);
        if (data_) std::memset(data_.get(), 0, end);
        written_.clear();
        high_water_.store(0, std::memory_order_relaxed);
    }
    bool tracks_poison() const { return track_poison_; }

private:
    struct FreeDeleter {
        void operator()(uint8_t *p) const { std::free(p); }
    };
    // Two writers can raise it at once: in the parallel replay a ring.put from another core
    // writes this scratchpad while this core's own instructions do (disjoint bytes, same epoch).
    void raise_high_water(int64_t end) {
        int64_t seen = high_water_.load(std::memory_order_relaxed);
        while (seen < end && !high_water_.compare_exchange_weak(seen, end, std::memory_order_relaxed)) {
        }
    }
    int64_t size_;
    bool track_poison_;
    std::atomic<int64_t> high_water_{0};  // end of the highest byte ever written (reset() reads it after the replay joined)
    const HazardContext *hazard_ = nullptr;
    std::unique_ptr<uint8_t, FreeDeleter> data_;
    WrittenBytes written_;  // poison tracking: the bytes some instruction wrote
};

}  // namespace sim
}  // namespace spyre
