// Schedules of the elementwise kernels (see elementwise_schedule.h).
//
// Performance shape (gen_elementwise op=add dtype=float16 d0=1024 d1=2048 d2=2,
// 8 MiB per tensor, 24 MiB moved): tiles of 64 rows x 1024 lanes on 32 cores,
// one SFU vector per row: 223.0 us simulated against a DRAM roofline of 215.9 us
// (96.8%). gelu at the same shape: 186.5 / 160.0 us (85.8%; the SFU work does
// not overlap DRAM within a core's synchronous tile loop).
#include "elementwise_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <vector>

#include "spyre/machine.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

namespace {



// SFU instructions per element vector of the op (fp32 work; transcendentals weighted by their cost).
double sfu_passes(const ElementwiseShape &s, double transcendental) {
    const double casts = s.dtype.bits() == 16 ? (s.binary() || s.gated() ? 3 : 2) : 0;
    if (s.op == "gelu") return casts + 9 + transcendental;
    if (s.gated()) return casts + 5 + 2 * transcendental;  // silu, then the product with the up half
    if (s.op == "silu") return casts + 4 + 2 * transcendental;  // exp and the division
    return casts + 1;
}

// Fp32 scratchpad temporaries of one SFU expression tree (inner nodes), in row vectors.
// (gelu and silu also keep one row of each intermediate Func.)
int sfu_temporaries(const ElementwiseShape &s) {
    if (s.op == "gelu") return 6 + 2;
    if (s.op == "silu") return 4 + 1;
    if (s.gated()) return 6 + 1;
    return 3;
}

}  // namespace

namespace {

// The plan with `copies` copies of the per-tile rows (1, or 2 for double
// buffering, which then only takes tiles that give each core an even number
// >= 2 of them: the backend double-buffers only such loops). tile_rows == 0:
// nothing fits.
ElementwiseSpyrePlan plan_with_copies(const ElementwiseShape &s, const ElementwiseSpyreOptions &options, int copies) {
    const MachineDescription &m = default_machine();
    const int eb = s.dtype.bytes();
    ElementwiseSpyrePlan p;
    p.tile_rows = 0;
    p.lanes = stick_lanes(s.dtype);
    p.d0p = round_up(s.d0, p.lanes);
    // One SFU instruction covers a whole row when it has at most kPlannerSfuVectorLanes
    // lanes; longer rows are cut into the largest stick multiple that divides them.
    p.row_vector = p.lanes;
    for (int v = p.lanes; v <= std::min(p.d0p, kPlannerSfuVectorLanes); v += p.lanes) {
        if (p.d0p % v == 0) p.row_vector = v;
    }

    const bool b_rows = s.binary() && !s.broadcast_b[1];                // b moves with y
    const int64_t b_row_bytes = s.binary() ? (s.broadcast_b[0] ? m.stick_bytes : (int64_t)p.d0p * eb) : 0;
    // a (2 d0p wide for swiglu) and result (and b when it moves with y) per row, in `copies` copies.
    const int a_widths = s.gated() ? 2 : 1;
    const int64_t per_row = copies * ((a_widths + 1) * (int64_t)p.d0p * eb + (b_rows ? b_row_bytes : 0));
    const int64_t fixed = (int64_t)sfu_temporaries(s) * p.row_vector * 4 + (b_rows ? 0 : b_row_bytes);
    const int64_t budget = m.scratchpad_bytes * 3 / 4 - fixed;
    if (budget < per_row) return p;
    const int max_rows = (int)std::min<int64_t>(budget / per_row, s.d1);

    // Estimated cycles: the card's DRAM time for the padded bytes (or one core's
    // DMA port, if few cores), plus per tile the DMA latency seen twice (load,
    // store) and the SFU time, which do not overlap with DRAM in a synchronous
    // tile loop (double buffered: about half of it is hidden behind the next tile's DMA).
    const double sfu_rate = m.sfu_bytes_per_cycle_per_corelet * m.corelets_per_core;
    const double row_sfu = sfu_passes(s, m.sfu_transcendental_cost) *
                           ((double)p.d0p * 4 / sfu_rate + m.sfu_instruction_overhead_cycles * p.d0p / p.row_vector);
    double best = std::numeric_limits<double>::max();
    const int max_cores = usable_cores(options.max_cores);
    for (int ty = 1; ty <= max_rows; ty++) {
        if (options.tile_rows > 0 && ty != options.tile_rows) continue;
        const int d1p = round_up(s.d1, ty), tiles = d1p / ty;
        int cz = 1, cy = 1;
        for (int z : divisors(s.d2)) {
            for (int y : divisors(tiles)) {
                // Double buffering needs an even staging loop (tiles of y per core).
                if (copies == 2 && (tiles / y) % 2 != 0) continue;
                if (z * y <= max_cores && z * y > cz * cy) cz = z, cy = y;
            }
        }
        if (copies == 2 && (tiles / cy) % 2 != 0) continue;  // (cy = 1 and an odd tile count)
        const double rows_per_core = (double)d1p / cy * s.d2 / cz;
        const double tiles_per_core = rows_per_core / ty;
        const double out_bytes = (double)s.d2 * d1p * p.d0p * eb, a_bytes = a_widths * out_bytes;
        const double b_bytes = b_rows ? (double)s.d2 * d1p * b_row_bytes : (double)s.d2 * (d1p / ty) * b_row_bytes;
        const double read = a_bytes + b_bytes, write = out_bytes;
        const double dram = m.dram_cycles(read, write, cz * cy);
        const double cost = dram + tiles_per_core * (2 * m.dma_latency_cycles + ty * row_sfu) / copies;
        if (cost < best * 0.999) {
            best = cost;
            p.tile_rows = ty;
            p.d1p = d1p;
            p.cores_d1 = cy;
            p.cores_d2 = cz;
        }
    }
    p.footprint_bytes = per_row * p.tile_rows + fixed;
    p.double_buffer = copies == 2;
    return p;
}

}  // namespace

ElementwiseSpyrePlan plan_elementwise_spyre(const ElementwiseShape &s, const ElementwiseSpyreOptions &options) {
    if (options.double_buffer) {
        const ElementwiseSpyrePlan p = plan_with_copies(s, options, 2);
        if (p.tile_rows > 0) return p;
    }
    const ElementwiseSpyrePlan p = plan_with_copies(s, options, 1);
    if (p.tile_rows == 0) {
        const MachineDescription &m = default_machine();
        if (options.tile_rows > 0) {
            throw std::runtime_error("elementwise: tile_rows=" + std::to_string(options.tile_rows) + " rows of " +
                                     std::to_string(s.d0) + " elements do not fit the scratchpad, or exceed d1=" +
                                     std::to_string(s.d1));
        }
        const int64_t row = (s.gated() ? 3 : 2) * (int64_t)p.d0p * s.dtype.bytes();
        throw std::runtime_error("elementwise: a row of " + std::to_string(s.d0) + " elements does not fit the scratchpad (" +
                                 std::to_string(row) + " bytes of " + std::to_string(m.scratchpad_bytes * 3 / 4) + ")");
    }
    return p;
}

void schedule_elementwise_host(ElementwiseFuncs f, const ElementwiseShape &s, const Target &target) {
    // Vectors no wider than a row, tails by ShiftInwards: no predicated (masked)
    // loads. Halide 14 takes some AVX-512 hosts (AMD Zen 4) for Sapphire Rapids,
    // and LLVM then lowers masked float16 loads with AVX512-FP16 instructions those
    // hosts do not have (SIGILL).
    int vec = 1;
    while (vec * 2 <= std::min(s.d0, target.natural_vector_size<float>())) vec *= 2;
    Var yz("yz");
    f.out.fuse(f.y, f.z, yz).parallel(yz, 8, TailStrategy::GuardWithIf);
    if (vec > 1) f.out.vectorize(f.x, vec, TailStrategy::ShiftInwards);
}

void schedule_elementwise_spyre(ElementwiseFuncs f, Func a_staged, Func b_staged, const ElementwiseShape &s,
                                const ElementwiseSpyrePlan &p) {
    _halide_user_assert(p.d1p % p.tile_rows == 0 && (p.d1p / p.tile_rows) % p.cores_d1 == 0 && s.d2 % p.cores_d2 == 0 &&
                        p.d0p % p.row_vector == 0)
        << "elementwise Spyre schedule: the plan does not divide the padded extents";
    // Rows split across the cores (z, then tiles of y); per core: z, tiles, rows.
    const CoreSplit cores =
        split_across_cores(f.out, {{f.z, s.d2, 1, p.cores_d2}, {f.y, p.d1p, p.tile_rows, p.cores_d1}});
    Var yo("yo"), yi("yi");
    const Var zr = cores.serial_of(f.z);
    f.out.split(cores.serial_of(f.y), yo, yi, p.tile_rows, TailStrategy::RoundUp);
    stick_vectorize(f.out, f.x);

    // Input tiles in scratchpad (DMA). A b that does not move with y is staged
    // once per z (once per core if it does not move with z either).
    // Double buffered: the next tile's DMA overlaps this tile's SFU work.
    auto stage = [&](Func g, const VarOrRVar &at) { stage_in_scratchpad(g, f.out, at, p.double_buffer); };
    stage(a_staged, yo);
    if (b_staged.defined()) {
        const Var at = !s.broadcast_b[1] ? yo : !s.broadcast_b[2] ? zr : cores.core;
        if (s.broadcast_b[0]) {
            // One element per row, staged as one whole stick (b is padded to a stick
            // along d0); RoundUp, since the stick is wider than the element it holds.
            b_staged.compute_at(f.out, at).store_in(MemoryType::VTCM).vectorize(b_staged.args()[0], p.lanes,
                                                                                 TailStrategy::RoundUp);
            if (p.double_buffer && !s.broadcast_b[1]) double_buffer_result(b_staged);
        } else if (!s.broadcast_b[1]) {
            stage(b_staged, at);
        } else {
            stage_in_scratchpad(b_staged, f.out, at);
        }
    }

    // The result tile on the SFU, one vector of whole sticks per row; the
    // output copies it to DRAM (DMA).
    f.result.compute_at(f.out, yo).store_in(MemoryType::VTCM).vectorize(f.x, p.row_vector, TailStrategy::RoundUp);
    if (p.double_buffer) double_buffer_result(f.result);  // this tile's store overlaps the next tile's SFU work
    for (Func g : f.intermediates) {
        g.compute_at(f.result, f.y).store_in(MemoryType::VTCM).vectorize(f.x, p.row_vector, TailStrategy::RoundUp);
    }
}

}  // namespace spyre
