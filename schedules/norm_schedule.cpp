// Schedules of layernorm and rmsnorm (see norm_schedule.h).
#include "norm_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "spyre/machine.h"
#include "planner.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

namespace {

constexpr int kSfuTemps = 5;        // row temporaries of the result expression

}  // namespace

// The candidate space: c cores (from the most that each get a row down to
// half of them, or to one if no tile fits with those), each with ceil(rows / c) rows, in tiles of at most 64 rows; the
// rows are padded to cores x tiles x tile_rows, which must be the rows padded
// to whole tiles. Per core, once: the weight (and
// bias) as staged and widened to float32, the SFU temporaries; per row: the
// input and the result (double-buffered), centered (layernorm) and squares
// (float32), the per-row scalars. Legality, double buffering and cost are the
// framework's (planner.h).
NormSpyrePlan plan_norm_spyre(int cols, int rows, const Type &t, bool centered, const NormSpyreOptions &options) {
    using MD = MachineDescription;
    const MachineDescription &m = scheduling_machine();
    NormSpyrePlan base;
    base.cols = cols;
    base.rows = rows;
    base.in_lanes = (int)(m.stick_bytes / t.bytes());
    base.cols_padded = (cols + base.in_lanes - 1) / base.in_lanes * base.in_lanes;
    base.row_vector = planning::row_vector_lanes(base.cols_padded, base.in_lanes);
    const int64_t cp = base.cols_padded;
    const int64_t per_core = cp * (t.bytes() + 4) * (centered ? 2 : 1) + (int64_t)kSfuTemps * base.row_vector * 4;
    const int64_t buffered_row = cp * 2 * t.bytes();
    const int64_t fixed_row = cp * ((centered ? 4 : 0) + 4) + 4 * 4;
    const int64_t budget = planning::scratchpad_budget();
    const int64_t fit_once = (budget - per_core) / (buffered_row + fixed_row);
    if (fit_once < 1) {
        throw std::runtime_error("norm: a row of " + std::to_string(cols) + " elements does not fit the scratchpad (" +
                                 std::to_string(buffered_row + fixed_row) + " bytes per row, " +
                                 std::to_string(budget - per_core) + " available)");
    }
    _halide_user_assert(options.tile_rows <= fit_once)
        << "norm Spyre schedule: tile_rows=" << options.tile_rows << " rows of " << cols
        << " elements do not fit the scratchpad (at most " << fit_once << " rows per tile)";
    // Per row on the SFU: the sums across the row (and the centering), the squares,
    // the scaling by the inverse, the weight (and bias), the casts of fp16.
    const int vec = base.row_vector;
    const double row_sfu = (centered ? 2 : 1) * planning::sfu_row_cycles(base.cols_padded, vec, 4, MD::SfuCost::RowReduce) +
                           ((centered ? 5 : 3) + (t.bits() == 16 ? 2 : 0)) *
                               planning::sfu_row_cycles(base.cols_padded, vec, 4, MD::SfuCost::Simple);
    const int max_cores = usable_cores(options.max_cores);
    const int most = std::max(1, std::min(max_cores, rows));
    const int fit = (int)std::min<int64_t>(64, fit_once);
    planning::PlanSearch<NormSpyrePlan> search;
    planning::Verdict last;
    // At least half the most cores; fewer only if no tile fits with those (a forced tile_rows).
    for (int c = most; c >= 1 && (c >= std::max(1, most / 2) || !search.found()); c--) {
        const int rows_per_core = (rows + c - 1) / c;
        for (int tile = options.tile_rows > 0 ? options.tile_rows : std::min(fit, rows_per_core); tile >= 1; tile--) {
            const int tiles_per_core = (rows_per_core + tile - 1) / tile;
            NormSpyrePlan p = base;
            p.cores = c;
            p.tile_rows = tile;
            p.rows_padded = c * tiles_per_core * tile;
            if (c > 1 && (int64_t)(c - 1) * tiles_per_core * tile >= rows) continue;  // a core of padding only
            // The tensors are padded to whole tiles only (generators/norm_generator.h, so
            // they keep the layout the kernels around them use): no tile past that.
            if (p.rows_padded != round_up(rows, tile)) continue;
            planning::TiledPlan tp;
            tp.buffered_bytes = buffered_row * tile;
            tp.fixed_bytes = fixed_row * tile + per_core;
            tp.staging_trip = tiles_per_core;
            tp.read_bytes = (double)p.rows_padded * cp * t.bytes() + (double)c * cp * t.bytes() * (centered ? 2 : 1);
            tp.write_bytes = (double)p.rows_padded * cp * t.bytes();
            tp.cores = c;
            tp.tiles_per_core = tiles_per_core;
            tp.compute_cycles_per_tile = tile * row_sfu;
            last = planning::judge(tp, options.double_buffer && rows >= 2);
            p.double_buffer = last.double_buffer;
            p.footprint_bytes = last.footprint_bytes;
            search.offer(p, last);
            if (options.tile_rows > 0) break;
        }
    }
    if (!search.found()) {
        throw std::runtime_error("norm: no tile of rows of " + std::to_string(cols) + " elements fits: " + last.reason);
    }
    return planning::with_estimate(search);
}

void schedule_norm_host(NormFuncs f, const Target &target) {
    const int vec = target.natural_vector_size<float>();
    Var yo("yo"), yi("yi");
    f.out.split(f.y, yo, yi, 8, TailStrategy::GuardWithIf).parallel(yo).vectorize(f.x, vec, TailStrategy::GuardWithIf);
    for (Func g : {f.sum, f.mean, f.sumsq, f.inv}) {
        if (g.defined()) g.compute_at(f.out, yi);
    }
    for (Func g : {f.centered, f.sq}) {
        if (g.defined()) g.compute_at(f.out, yi).vectorize(f.x, vec, TailStrategy::GuardWithIf);
    }
    f.sq.update().vectorize(f.x, vec, TailStrategy::GuardWithIf);
    for (Func g : {f.weight_f, f.bias_f}) {
        if (g.defined()) g.compute_root().vectorize(f.x, vec, TailStrategy::GuardWithIf);
    }
}

void schedule_norm_spyre(NormFuncs f, Func in_staged, Func weight_in, Func bias_in, const Type &t,
                         const NormSpyrePlan &p) {
    const RowTileLoops loops = split_row_tiles_across_cores(f.out, f.x, f.y, p.rows_padded, p.cores, p.tile_rows, p.in_lanes);
    const Var &core = loops.core, &yo = loops.yo;

    // Once per core: weight (and bias) widened to float32. For float32 weight_f is a
    // plain copy of the input, which the backend turns into one DMA.
    const bool widen = t != Float(32);
    for (auto [wide, staged] : {std::pair<Func, Func>{f.weight_f, weight_in}, {f.bias_f, bias_in}}) {
        if (!wide.defined()) continue;
        if (widen) stage_in_scratchpad(staged, f.out, core);
        wide.compute_at(f.out, core).store_in(MemoryType::VTCM).vectorize(f.x, widen ? p.row_vector : stick_lanes(Float(32)),
                                                                           TailStrategy::RoundUp);
    }

    // Per tile of rows: the input (DMA), the row statistics, the result.
    // Double buffered: the next tile's DMA overlaps this tile's SFU work, and this
    // tile's store the next tile's.
    stage_in_scratchpad(in_staged, f.out, yo, p.double_buffer);
    for (Func g : {f.sum, f.mean, f.sumsq, f.inv}) {
        if (g.defined()) g.compute_at(f.out, yo).store_in(MemoryType::VTCM);
    }
    for (Func g : {f.centered, f.sq, f.result}) {
        if (g.defined()) {
            g.compute_at(f.out, yo).store_in(MemoryType::VTCM).vectorize(f.x, p.row_vector, TailStrategy::RoundUp);
        }
    }
    if (p.double_buffer) double_buffer_result(f.result);
    f.sq.update().vectorize(f.x, p.row_vector, TailStrategy::RoundUp);
}

}  // namespace spyre
