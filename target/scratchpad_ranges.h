// Byte ranges of program-tree operands, for the passes that compare what
// instructions touch (sfu_copy_forwarding.cpp, zero_fill_elision.cpp):
// whether two affine addresses are the same, the bytes `rows` runs of
// `row_bytes` at a row stride cover over all iterations of the enclosing
// loops, and whether two sets of ranges meet. Ranges are over-approximations
// (bounding intervals), as synchronization.h's are.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "program_tree.h"

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

}  // namespace compiler
}  // namespace spyre
