// Byte ranges of program-tree operands, for the passes that compare what
// instructions touch (sfu_copy_forwarding.cpp, zero_fill_elision.cpp):
// whether two affine addresses are the same, rows of bytes at a stride and
// when two of them cover the same bytes, the bytes they cover over all
// iterations of the enclosing loops, and whether two sets of ranges meet.
// Ranges are over-approximations (bounding intervals), as scratchpad_accesses.h's are.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "program_tree/program_tree.h"
#include "program_tree/scratchpad_accesses.h"

namespace spyre {
namespace compiler {

// The same base and the same coefficient at every loop level.
inline bool same_address(const SymOperand &a, const SymOperand &b) {
    if (a.base != b.base) return false;
    const size_t levels = std::max(a.coef.size(), b.coef.size());
    for (size_t d = 0; d < levels; d++) {
        if (a.coef_at(d) != b.coef_at(d)) return false;
    }
    return true;
}

// The bytes of `rows` runs of `row_bytes` every `stride` bytes from `addr`, over the loop box
// whose trip counts are `trips` (outermost first).
inline std::vector<ScratchpadAccess> strided_range(const SymOperand &addr, int64_t row_bytes, int64_t rows,
                                                   int64_t stride, const std::vector<int64_t> &trips, bool write) {
    int64_t lo = addr.base, hi = addr.base;
    for (size_t d = 0; d < trips.size(); d++) {
        const int64_t span = addr.coef_at(d) * (trips[d] - 1);
        if (span < 0) lo += span;
        else hi += span;
    }
    const int64_t rows_span = (rows - 1) * stride;
    lo += std::min<int64_t>(0, rows_span);
    hi += std::max<int64_t>(0, rows_span) + row_bytes;
    return {{lo, hi, write}};
}

// Do any two ranges meet (whether they read or write)?
inline bool ranges_meet(const std::vector<ScratchpadAccess> &a, const std::vector<ScratchpadAccess> &b) {
    for (const auto &x : a) {
        for (const auto &y : b) {
            if (x.lo < y.hi && y.lo < x.hi) return true;
        }
    }
    return false;
}

// Does item n (an instruction or a loop) touch any of `range`?
inline bool touches(const ProgramNode &n, const std::vector<ScratchpadAccess> &range,
                    const std::vector<int64_t> &trips) {
    return ranges_meet(node_accesses(n, trips), range);
}

// `rows` runs of `row_bytes` every `stride` bytes from an affine address.
struct StridedRows {
    SymOperand addr;
    int64_t row_bytes = 0, rows = 0, stride = 0;

    // Contiguous rows are one long row: 4 rows of 128 bytes at a stride of 128 are one row of 512.
    StridedRows canonical() const {
        StridedRows r = *this;
        if (r.rows == 1 || r.stride == r.row_bytes) {
            r.row_bytes *= r.rows;
            r.rows = 1;
            r.stride = r.row_bytes;
        }
        return r;
    }
    std::vector<ScratchpadAccess> range(const std::vector<int64_t> &trips, bool write = false) const {
        return strided_range(addr, row_bytes, rows, stride, trips, write);
    }
};

// Do two row sets cover exactly the same bytes (up to canonical form)?
inline bool same_bytes(const StridedRows &a, const StridedRows &b) {
    const StridedRows x = a.canonical(), y = b.canonical();
    return same_address(x.addr, y.addr) && x.row_bytes == y.row_bytes && x.rows == y.rows && x.stride == y.stride;
}

}  // namespace compiler
}  // namespace spyre
