// DMA unit semantics: strided transfers of whole sticks between device DRAM
// and the core's scratchpad (with zero padding on loads), and ring transfers
// into another core's scratchpad.
#include <algorithm>
#include <cstring>

#include "sim/unit_semantics.h"

namespace spyre {
namespace sim {

namespace {

void require_sticks(int64_t v, int64_t stick, const char *name) {
    if (v % stick != 0) {
        throw RuleViolation(std::string("DMA not in whole sticks: ") + name + " = " + std::to_string(v) +
                            " is not a multiple of the " + std::to_string(stick) + "-byte stick");
    }
}

void check_dram(int64_t off, int64_t len, const ArgumentBinding &dram, const char *what);

// Bounding-interval check of strided runs in DRAM (exact: the extreme runs are actual runs).
void check_dram_box(int64_t base, int64_t len, int64_t rows, int64_t row_stride, int64_t planes, int64_t plane_stride,
                    const ArgumentBinding &dram, const char *what) {
    if (len == 0 || rows == 0 || planes == 0) return;
    const int64_t lo = base + std::min<int64_t>(0, (rows - 1) * row_stride) + std::min<int64_t>(0, (planes - 1) * plane_stride);
    const int64_t hi = base + std::max<int64_t>(0, (rows - 1) * row_stride) + std::max<int64_t>(0, (planes - 1) * plane_stride) + len;
    if (lo >= 0 && hi <= dram.bytes) return;
    // Report the first run that is outside, as a per-run check would.
    for (int64_t p = 0; p < planes; p++)
        for (int64_t r = 0; r < rows; r++) check_dram(base + p * plane_stride + r * row_stride, len, dram, what);
}

void check_dram(int64_t off, int64_t len, const ArgumentBinding &dram, const char *what) {
    if (off < 0 || off > dram.bytes || len > dram.bytes - off) {
        throw RuleViolation(std::string(what) + " DRAM bytes [" + std::to_string(off) + ", " + std::to_string(off + len) +
                            ") are outside the tensor's " + std::to_string(dram.bytes) + "-byte allocation");
    }
}

}  // namespace

void check_dram_window(isa::Opcode op, const int64_t *f, const DramWindow &window, const char *arg_name) {
    const DramExtent e = dma_dram_extent(op, f);
    if (window.covers(e)) return;
    const bool load = op == isa::Opcode::DmaLoad;
    throw RuleViolation(std::string(load ? "dma.load reads" : "dma.store writes") + " bytes [" + std::to_string(e.lo) +
                        ", " + std::to_string(e.hi) + ") of '" + arg_name + "', outside the core's window [" +
                        std::to_string(window.base) + ", " + std::to_string(window.base + window.span) +
                        ") of it: a core addresses at most max_core_span_bytes = " + std::to_string(window.span) +
                        " bytes of a tensor at a time; move the window first with dma.window");
}

void execute_dma_load(const int64_t *f, int64_t stick, Scratchpad &sp, const ArgumentBinding &dram, bool functional) {
    namespace F = isa::field::DmaLoad;
    require_sticks(f[F::dram], stick, "DRAM offset");
    require_sticks(f[F::sp], stick, "scratchpad address");
    require_sticks(f[F::row_bytes], stick, "row_bytes");
    require_sticks(f[F::valid_bytes], stick, "valid_bytes");
    require_sticks(f[F::dram_row_stride], stick, "dram_row_stride");
    require_sticks(f[F::sp_row_stride], stick, "sp_row_stride");
    require_sticks(f[F::dram_plane_stride], stick, "dram_plane_stride");
    require_sticks(f[F::sp_plane_stride], stick, "sp_plane_stride");
    const int64_t row_bytes = f[F::row_bytes], valid_bytes = f[F::valid_bytes];
    sp.check_box(f[F::sp], row_bytes, f[F::rows], f[F::sp_row_stride], f[F::planes], f[F::sp_plane_stride],
                 "dma.load destination", Access::Write);
    check_dram_box(f[F::dram], valid_bytes, std::min(f[F::valid_rows], f[F::rows]), f[F::dram_row_stride],
                   std::min(f[F::valid_planes], f[F::planes]), f[F::dram_plane_stride], dram, "dma.load source");
    if (!functional) return;
    for (int64_t p = 0; p < f[F::planes]; p++) {
        for (int64_t r = 0; r < f[F::rows]; r++) {
            const int64_t spa = f[F::sp] + p * f[F::sp_plane_stride] + r * f[F::sp_row_stride];
            sp.check_write(spa, row_bytes, "dma.load destination");
            const bool valid = p < f[F::valid_planes] && r < f[F::valid_rows];
            const int64_t n = valid ? valid_bytes : 0;
            if (n > 0) {
                const int64_t da = f[F::dram] + p * f[F::dram_plane_stride] + r * f[F::dram_row_stride];
                check_dram(da, n, dram, "dma.load source");
                if (functional) std::memcpy(sp.data() + spa, dram.data + da, n);
            }
            if (functional && n < row_bytes) std::memset(sp.data() + spa + n, 0, row_bytes - n);
        }
    }
}

void execute_dma_store(const int64_t *f, int64_t stick, Scratchpad &sp, const ArgumentBinding &dram, bool functional) {
    namespace F = isa::field::DmaStore;
    require_sticks(f[F::dram], stick, "DRAM offset");
    require_sticks(f[F::sp], stick, "scratchpad address");
    require_sticks(f[F::row_bytes], stick, "row_bytes");
    require_sticks(f[F::dram_row_stride], stick, "dram_row_stride");
    require_sticks(f[F::sp_row_stride], stick, "sp_row_stride");
    require_sticks(f[F::dram_plane_stride], stick, "dram_plane_stride");
    require_sticks(f[F::sp_plane_stride], stick, "sp_plane_stride");
    const int64_t row_bytes = f[F::row_bytes];
    sp.check_box(f[F::sp], row_bytes, f[F::rows], f[F::sp_row_stride], f[F::planes], f[F::sp_plane_stride],
                 "dma.store source");
    check_dram_box(f[F::dram], row_bytes, f[F::rows], f[F::dram_row_stride], f[F::planes], f[F::dram_plane_stride], dram,
                   "dma.store destination");
    if (!functional) return;
    for (int64_t p = 0; p < f[F::planes]; p++) {
        for (int64_t r = 0; r < f[F::rows]; r++) {
            const int64_t spa = f[F::sp] + p * f[F::sp_plane_stride] + r * f[F::sp_row_stride];
            const int64_t da = f[F::dram] + p * f[F::dram_plane_stride] + r * f[F::dram_row_stride];
            sp.check_read(spa, row_bytes, "dma.store source");
            check_dram(da, row_bytes, dram, "dma.store destination");
            if (functional) std::memcpy(dram.data + da, sp.data() + spa, row_bytes);
        }
    }
}

void execute_ring_put(const int64_t *f, int64_t stick, Scratchpad &src, Scratchpad &dst, bool functional) {
    namespace F = isa::field::RingPut;
    require_sticks(f[F::src], stick, "ring source address");
    require_sticks(f[F::dst], stick, "ring destination address");
    require_sticks(f[F::bytes], stick, "ring transfer size");
    src.check_read(f[F::src], f[F::bytes], "ring.put source");
    dst.check_write(f[F::dst], f[F::bytes], "ring.put destination (in the receiving core)");
    if (functional) std::memmove(dst.data() + f[F::dst], src.data() + f[F::src], f[F::bytes]);
}

}  // namespace sim
}  // namespace spyre
