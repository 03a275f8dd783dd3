// Schedules of softmax (see softmax_schedule.h).
#include "softmax_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <stdexcept>

#include "spyre/machine.h"
#include "planner.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

// The candidate space: c cores (from the most that each get a row down to
// half of them, or to one if no tile fits with those), each with ceil(rows / c) rows, in tiles of at most 32 rows; the rows
// are padded to cores x tiles x tile_rows. Per row: the input, exp (f32) and the
// result, and two scalars. Legality, double buffering and cost are the
// framework's (planner.h).
SoftmaxSpyrePlan plan_softmax_spyre(int cols, int rows, const Type &t, const SoftmaxSpyreOptions &options) {
    using MD = MachineDescription;
    const MachineDescription &m = scheduling_machine();
    SoftmaxSpyrePlan base;
    base.cols = cols;
    base.rows = rows;
    base.in_lanes = (int)(m.stick_bytes / t.bytes());
    base.f32_lanes = (int)(m.stick_bytes / 4);
    base.cols_padded = (cols + base.in_lanes - 1) / base.in_lanes * base.in_lanes;
    base.row_vectors = options.row_vectors;
    const int64_t cp = base.cols_padded;
    const int64_t buffered_row = cp * 2 * t.bytes();                 // the input and the result
    const int64_t fixed_row = cp * 4 + 2 * m.stick_bytes;            // exp (f32) and the max and sum
    const int64_t budget = planning::scratchpad_budget();
    if (2 * buffered_row + fixed_row > budget && buffered_row + fixed_row > budget) {
        throw std::runtime_error("softmax: a row of " + std::to_string(cols) + " elements does not fit the scratchpad (" +
                                 std::to_string(buffered_row + fixed_row) + " bytes per row)");
    }
    // Per row on the SFU: the max and the sum across the row, exp(x - max) and the
    // product by 1/sum, and the casts of fp16; one instruction per row vector.
    const int vec = options.row_vectors ? planning::row_vector_lanes(base.cols_padded, base.in_lanes) : base.f32_lanes;
    const double row_sfu = 2 * planning::sfu_row_cycles(base.cols_padded, vec, 4, MD::SfuCost::RowReduce) +
                           planning::sfu_row_cycles(base.cols_padded, vec, 4, MD::SfuCost::Transcendental) +
                           (2 + (t.bits() == 16 ? 2 : 0)) * planning::sfu_row_cycles(base.cols_padded, vec, 4, MD::SfuCost::Simple);
    const int max_cores = usable_cores(options.max_cores);
    const int most = std::max(1, std::min(max_cores, rows));
    const int fit = (int)std::min<int64_t>(32, budget / (buffered_row + fixed_row));
    planning::PlanSearch<SoftmaxSpyrePlan> search;
    planning::Verdict last;
    // At least half the most cores; fewer only if no tile fits with those (a forced tile_rows).
    for (int c = most; c >= 1 && (c >= std::max(1, most / 2) || !search.found()); c--) {
        const int per_core = (rows + c - 1) / c;
        // A forced tile_rows is taken as it is (but at most what fits once).
        const int forced = (int)std::min<int64_t>(options.tile_rows, budget / (buffered_row + fixed_row));
        for (int tile = options.tile_rows > 0 ? forced : std::min(fit, per_core); tile >= 1; tile--) {
            if (options.tile_rows > 0 && tile != forced) break;
            const int tiles_per_core = (per_core + tile - 1) / tile;
            SoftmaxSpyrePlan p = base;
            p.cores = c;
            p.tile_rows = tile;
            p.rows_padded = c * tiles_per_core * tile;
            if (c > 1 && (int64_t)(c - 1) * tiles_per_core * tile >= rows) continue;  // a core of padding only
            planning::TiledPlan tp;
            tp.buffered_bytes = buffered_row * tile;
            tp.fixed_bytes = fixed_row * tile;
            tp.staging_trip = tiles_per_core;
            tp.read_bytes = tp.write_bytes = (double)p.rows_padded * cp * t.bytes();
            tp.cores = c;
            tp.tiles_per_core = tiles_per_core;
            tp.compute_cycles_per_tile = tile * row_sfu;
            last = planning::judge(tp, options.double_buffer);
            p.double_buffer = last.double_buffer;
            p.footprint_bytes = last.footprint_bytes;
            search.offer(p, last);
        }
    }
    if (!search.found()) {
        throw std::runtime_error("softmax: no tile of rows of " + std::to_string(cols) + " elements fits: " + last.reason);
    }
    return planning::with_estimate(search);
}

void schedule_softmax_host(SoftmaxFuncs f, const Target &target) {
    const int vec = target.natural_vector_size<float>();
    Var yo("yo"), yi("yi");
    f.out.split(f.y, yo, yi, 8, TailStrategy::GuardWithIf).parallel(yo).vectorize(f.x, vec, TailStrategy::GuardWithIf);
    f.max.compute_at(f.out, yi);
    f.sum.compute_at(f.out, yi);
    f.exp.compute_at(f.out, yi).vectorize(f.x, vec, TailStrategy::GuardWithIf);
}

void schedule_softmax_spyre(SoftmaxFuncs f, Func in_staged, const SoftmaxSpyrePlan &p) {
    const RowTileLoops loops = split_row_tiles_across_cores(f.out, f.x, f.y, p.rows_padded, p.cores, p.tile_rows, p.in_lanes);
    const Var &yo = loops.yo;
    stage_in_scratchpad(in_staged, f.out, yo, p.double_buffer);  // double buffered: the next tile's DMA overlaps this tile's SFU work
    for (Func g : {f.max, f.sum}) g.compute_at(f.out, yo).store_in(MemoryType::VTCM);
    // The SFU takes vectors of any number of whole sticks: one instruction per row
    // instead of one per stick (up to sfu_max_vector_lanes() lanes; longer rows loop).
    const int row_vector =
        p.row_vectors ? std::min(p.cols_padded, sfu_max_vector_lanes() / p.in_lanes * p.in_lanes) : p.in_lanes;
    f.exp.compute_at(f.out, yo).store_in(MemoryType::VTCM).vectorize(f.x, p.row_vectors ? row_vector : p.f32_lanes,
                                                                      TailStrategy::RoundUp);
    f.result.compute_at(f.out, yo).store_in(MemoryType::VTCM).vectorize(f.x, row_vector, TailStrategy::RoundUp);
    if (p.double_buffer) double_buffer_result(f.result);  // this tile's store overlaps the next tile's SFU work
}

}  // namespace spyre
