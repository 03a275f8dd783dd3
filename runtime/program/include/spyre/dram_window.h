// The core's DRAM window: the one definition of the max_core_span_bytes rule.
// A core addresses at most `max_core_span_bytes` of a tensor at a time: the
// window [base, base + span) of each argument, initially [0, span), moved by
// dma.window (isa.def). Every dma.load (its valid part) and dma.store must lie
// inside the current window of its argument. The simulator enforces the rule,
// the compiler (target/emission/dram_windows.h) emits windows so its programs keep it.
#pragma once

#include <cstdint>

#include "spyre/isa.h"

namespace spyre {

// Bytes [lo, hi) of its argument one transfer touches; lo == hi when it touches none.
struct DramExtent {
    int64_t lo = 0, hi = 0;
    bool empty() const { return lo == hi; }
};

// The DRAM runs of a dma.load (the bytes it reads: valid bytes of the valid rows and planes) or
// a dma.store: planes x rows runs of `len` bytes, from its evaluated fields (one int64 per field
// of isa.def, in table order).
struct DmaDramRuns {
    int64_t base = 0, len = 0, rows = 0, row_stride = 0, planes = 0, plane_stride = 0;
    // The bounding interval; exact, since the extreme runs are actual runs.
    DramExtent extent() const;
};
DmaDramRuns dma_dram_runs(isa::Opcode op, const int64_t *fields);
inline DramExtent dma_dram_extent(isa::Opcode op, const int64_t *fields) { return dma_dram_runs(op, fields).extent(); }

struct DramWindow {
    int64_t base = 0;
    int64_t span = 0;  // the machine's max_core_span_bytes
    bool covers(const DramExtent &e) const { return e.empty() || (e.lo >= base && e.hi - base <= span); }
};

}  // namespace spyre
