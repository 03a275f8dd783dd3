// The written bytes of a scratchpad as an interval set (see written_bytes.h).
#include "written_bytes.h"

#include <algorithm>
#include <iterator>

namespace spyre {
namespace sim {

namespace {

// The bounding interval of a box (strides may be negative).
void bounding(const ByteBox &b, int64_t *lo, int64_t *hi) {
    *lo = b.base + std::min<int64_t>(0, (b.rows - 1) * b.row_stride) + std::min<int64_t>(0, (b.planes - 1) * b.plane_stride);
    *hi = b.base + std::max<int64_t>(0, (b.rows - 1) * b.row_stride) + std::max<int64_t>(0, (b.planes - 1) * b.plane_stride) +
          b.len;
}

bool empty(const ByteBox &b) { return b.len <= 0 || b.rows <= 0 || b.planes <= 0; }

// Rows are contiguous when each starts where the previous ended (one run of rows * len bytes).
bool rows_contiguous(const ByteBox &b) { return b.rows == 1 || b.row_stride == b.len; }

}  // namespace

int64_t WrittenBytes::first_unwritten(int64_t lo, int64_t hi) const {
    if (lo >= hi) return -1;
    auto it = runs_.upper_bound(lo);  // the first interval starting after lo
    if (it == runs_.begin()) return lo;
    --it;  // the last interval starting at or before lo
    if (it->second <= lo) return lo;
    return it->second >= hi ? -1 : it->second;  // intervals are non-adjacent: its end is unwritten
}

int64_t WrittenBytes::first_unwritten(const ByteBox &b) const {
    if (empty(b)) return -1;
    int64_t lo, hi;
    bounding(b, &lo, &hi);
    if (first_unwritten(lo, hi) < 0) return -1;
    // Run by run, in address order of the runs' starts within each plane.
    int64_t first = -1;
    const int64_t row_len = rows_contiguous(b) ? b.rows * b.len : b.len;
    const int64_t rows = rows_contiguous(b) ? 1 : b.rows;
    for (int64_t p = 0; p < b.planes; p++) {
        for (int64_t r = 0; r < rows; r++) {
            const int64_t start = b.base + p * b.plane_stride + r * b.row_stride;
            const int64_t hole = first_unwritten(start, start + row_len);
            if (hole >= 0 && (first < 0 || hole < first)) first = hole;
        }
    }
    return first;
}

void WrittenBytes::mark(int64_t lo, int64_t hi) {
    if (lo >= hi) return;
    // Merge with every interval that overlaps or touches [lo, hi).
    auto it = runs_.upper_bound(lo);
    if (it != runs_.begin()) {
        auto prev = std::prev(it);
        if (prev->second >= lo) {
            if (prev->second >= hi) return;  // already written
            lo = prev->first;
            it = prev;
        }
    }
    while (it != runs_.end() && it->first <= hi) {
        hi = std::max(hi, it->second);
        it = runs_.erase(it);
    }
    runs_.emplace_hint(it, lo, hi);
}

void WrittenBytes::mark(const ByteBox &b) {
    if (empty(b)) return;
    int64_t lo, hi;
    bounding(b, &lo, &hi);
    if (first_unwritten(lo, hi) < 0) return;
    const int64_t row_len = rows_contiguous(b) ? b.rows * b.len : b.len;
    const int64_t rows = rows_contiguous(b) ? 1 : b.rows;
    for (int64_t p = 0; p < b.planes; p++) {
        for (int64_t r = 0; r < rows; r++) {
            const int64_t start = b.base + p * b.plane_stride + r * b.row_stride;
            mark(start, start + row_len);
        }
    }
}

}  // namespace sim
}  // namespace spyre
