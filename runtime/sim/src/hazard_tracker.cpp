// Scratchpad hazards in simulated time (see hazard_tracker.h).
#include "hazard_tracker.h"

#include <algorithm>
#include <sstream>

#include "scratchpad.h"

namespace spyre {
namespace sim {

namespace {

void bounds(const ByteBox &b, int64_t *lo, int64_t *hi) {
    *lo = b.base + std::min<int64_t>(0, (b.rows - 1) * b.row_stride) + std::min<int64_t>(0, (b.planes - 1) * b.plane_stride);
    *hi = b.base + std::max<int64_t>(0, (b.rows - 1) * b.row_stride) + std::max<int64_t>(0, (b.planes - 1) * b.plane_stride) +
          b.len;
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// Does [x, x + len) meet one of the rows of plane base `p0` of box b?
bool meets_rows(int64_t x, int64_t len, int64_t p0, const ByteBox &b) {
    int64_t first = p0, step = b.row_stride;
    if (b.rows == 1 || step == 0) return x < first + b.len && first < x + len;
    if (step < 0) {
        first += (b.rows - 1) * step;
        step = -step;
    }
    // Rows r with first + r * step < x + len and first + r * step + b.len > x.
    const int64_t r_lo = std::max<int64_t>(0, floor_div(x - b.len - first, step) + 1);
    const int64_t r_hi = std::min<int64_t>(b.rows - 1, floor_div(x + len - first - 1, step));
    return r_lo <= r_hi;
}

bool overlap(const ByteBox &a, const ByteBox &b) {
    if (a.len <= 0 || b.len <= 0 || a.rows <= 0 || b.rows <= 0 || a.planes <= 0 || b.planes <= 0) return false;
    int64_t alo, ahi, blo, bhi;
    bounds(a, &alo, &ahi);
    bounds(b, &blo, &bhi);
    if (ahi <= blo || bhi <= alo) return false;
    // Walk the runs of the box with fewer of them against the rows of the other.
    constexpr int64_t kMaxWalk = 1 << 16;  // beyond this, the bounding intervals decide (conservative)
    auto runs = [](const ByteBox &x) { return x.planes > kMaxWalk || x.rows > kMaxWalk ? kMaxWalk + 1 : x.rows * x.planes; };
    const ByteBox &walk = runs(a) <= runs(b) ? a : b;
    const ByteBox &other = &walk == &a ? b : a;
    if (runs(walk) > kMaxWalk || other.planes > kMaxWalk || runs(walk) * other.planes > kMaxWalk) return true;
    for (int64_t p = 0; p < walk.planes; p++) {
        for (int64_t r = 0; r < walk.rows; r++) {
            const int64_t x = walk.base + p * walk.plane_stride + r * walk.row_stride;
            for (int64_t q = 0; q < other.planes; q++) {
                if (meets_rows(x, walk.len, other.base + q * other.plane_stride, other)) return true;
            }
        }
    }
    return false;
}

std::string describe(const ByteBox &b) {
    int64_t lo, hi;
    bounds(b, &lo, &hi);
    return "[" + std::to_string(lo) + ", " + std::to_string(hi) + ")";
}

const char *unit_word(int unit) {
    switch (unit) {
    case 0: return "the DMA unit";
    case 1: return "the PT unit";
    case 2: return "the SFU";
    default: return "a ring transfer";
    }
}

}  // namespace

void HazardTracker::prune(double now) {
    if (now < earliest_until_) return;  // nothing has ended yet
    live_.erase(std::remove_if(live_.begin(), live_.end(), [now](const Occupancy &o) { return o.until <= now; }),
                live_.end());
    earliest_until_ = kUntilUnknown;
    for (const Occupancy &o : live_) earliest_until_ = std::min(earliest_until_, o.until);
}

void HazardTracker::check(int unit, const ByteBox &box, bool write, double now, const char *what) {
    for (const Occupancy &o : live_) {
        if (o.unit == unit || o.until <= now || (!write && !o.write) || !overlap(box, o.box)) continue;
        std::ostringstream os;
        os.precision(1);
        os << std::fixed << what << " " << describe(box) << (write ? " writes" : " reads") << " at cycle " << now
           << " scratchpad bytes that " << o.what << " " << describe(o.box) << " (" << unit_word(o.unit) << ") is still "
           << (o.write ? "writing" : "reading");
        if (o.until != kUntilUnknown) os << " until cycle " << o.until;
        os << ": a wait between the two is missing";
        throw RuleViolation(os.str());
    }
}

double HazardTracker::own_writes_end(int unit, const ByteBox &box, double now) const {
    double end = now;
    for (const Occupancy &o : live_) {
        // (A unit's own transfers have ended their DRAM part, so their end is known, before it issues
        // the next one; an unknown end is never waited for.)
        if (o.unit == unit && o.write && o.until > end && o.until != kUntilUnknown && overlap(box, o.box)) end = o.until;
    }
    return end;
}

int64_t HazardTracker::occupy(int unit, const ByteBox &box, bool write, double until, const char *what) {
    live_.push_back({next_handle_, unit, box, write, until, what});
    earliest_until_ = std::min(earliest_until_, until);
    return next_handle_++;
}

void HazardTracker::set_until(int64_t handle, double until) {
    for (Occupancy &o : live_) {
        if (o.handle == handle) {
            o.until = until;
            earliest_until_ = std::min(earliest_until_, until);
            return;
        }
    }
}

}  // namespace sim
}  // namespace spyre
