// DMA unit semantics: strided transfers of whole sticks between device DRAM
// and the core's scratchpad (with zero padding on loads), and ring transfers
// into another core's scratchpad.
#include <algorithm>
#include <cstring>

#include "unit_semantics.h"

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

// The transfer's DRAM runs inside the tensor's allocation: the bounding interval, and when it is
// outside, the first run that is, as a per-run check would report.
void check_dram_runs(isa::Opcode op, const int64_t *f, const ArgumentBinding &dram, const char *what) {
    const DmaDramRuns runs = dma_dram_runs(op, f);
    const DramExtent e = runs.extent();
    if (e.empty() || (e.lo >= 0 && e.hi <= dram.bytes)) return;
    for (int64_t p = 0; p < runs.planes; p++)
        for (int64_t r = 0; r < runs.rows; r++)
            check_dram(runs.base + p * runs.plane_stride + r * runs.row_stride, runs.len, dram, what);
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
    check_dram_runs(isa::Opcode::DmaLoad, f, dram, "dma.load source");
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
    check_dram_runs(isa::Opcode::DmaStore, f, dram, "dma.store destination");
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
