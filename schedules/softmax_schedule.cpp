// Schedules of softmax (see softmax_schedule.h).
#include "softmax_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "spyre/machine.h"
#include "planner.h"
#include "row_tile_planner.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

namespace {

// Axis 1: tiles of whole sticks of columns, every tile holding all the rows; the even core
// split of the most cores for each tile width, costed by the framework. Per tile: the input and
// the result (double-buffered), exp and one f32 temporary of the tile, the max and the sum.
SoftmaxSpyrePlan plan_softmax_columns(SoftmaxSpyrePlan p, const Type &t, const SoftmaxSpyreOptions &options,
                                      const MachineDescription &m) {
    using MD = MachineDescription;
    const int lanes = p.in_lanes, eb = t.bytes();
    const int cols_up = (p.cols + lanes - 1) / lanes * lanes;
    const double rows = p.rows;
    auto sfu = [&](double n, MD::SfuCost cost) { return m.sfu_instruction_cycles(n, rows, 4, cost); };
    planning::PlanSearch<SoftmaxSpyrePlan> search("softmax");
    planning::Verdict last;
    for (int tile = std::min(cols_up, sfu_max_vector_lanes() / lanes * lanes); tile >= lanes; tile -= lanes) {
        SoftmaxSpyrePlan c = p;
        c.tile_cols = tile;
        c.cols_padded = (p.cols + tile - 1) / tile * tile;
        const int tiles = c.cols_padded / tile;
        c.cores = planning::even_core_split({tiles}, usable_cores(options.max_cores))[0];
        planning::TiledPlan tp;
        tp.buffered_bytes = (int64_t)p.rows * tile * eb * 2;  // the staged input and the result
        tp.fixed_bytes = (int64_t)p.rows * tile * 4 * 2 + (int64_t)tile * 4 * 2;
        tp.staging_trip = tiles / c.cores;
        tp.per_core_trips = {tiles / c.cores};
        tp.cores = c.cores;
        tp.tiles_per_core = (double)tiles / c.cores;
        tp.read_bytes = tp.write_bytes = (double)c.cols_padded * p.rows * eb;
        // The max and the sum (one SFU op over the rows each), x - max and its exp, the division,
        // and the casts of fp16 (in and out).
        tp.compute_cycles_per_tile = sfu(tile, MD::SfuCost::Simple) * (3 + (t.bits() == 16 ? 2 : 0)) +
                                     2 * sfu(tile, MD::SfuCost::Transcendental);
        last = planning::judge(tp, options.double_buffer, m);
        c.double_buffer = last.double_buffer;
        c.footprint_bytes = last.footprint_bytes;
        search.offer(c, last, [&] {
            return "axis 1, tiles of " + std::to_string(tile) + " columns, " + std::to_string(c.cores) + " cores";
        });
    }
    if (!search.found()) {
        throw std::runtime_error("softmax axis=1: the " + std::to_string(p.rows) + " rows of one stick of columns (" +
                                 std::to_string(lanes) + " lanes) do not fit the scratchpad (" + last.reason +
                                 "); a tile holds every row of its columns, and softmax over more rows is not "
                                 "supported (a schedule that streams the rows twice is not built)");
    }
    return planning::with_estimate(search, m);
}

}  // namespace

bool softmax_lane_steps(int cols, const Type &t) {
    const int lanes = stick_lanes(t);
    return cols % lanes == 0 && cols > lanes;
}

// A row of softmax for the row-tile planner (row_tile_planner.h; tiles of at most
// 32 rows). Per row: the input and the result (double-buffered), exp (f32) and two
// scalars.
SoftmaxSpyrePlan plan_softmax_spyre(int cols, int rows, const Type &t, const SoftmaxSpyreOptions &options, int axis) {
    using MD = MachineDescription;
    const MachineDescription &m = scheduling_machine();
    SoftmaxSpyrePlan p;
    p.cols = cols;
    p.rows = rows;
    p.in_lanes = (int)(m.stick_bytes / t.bytes());
    p.f32_lanes = (int)(m.stick_bytes / 4);
    p.cols_padded = (cols + p.in_lanes - 1) / p.in_lanes * p.in_lanes;
    p.row_vectors = options.row_vectors;
    if (axis == 1) {
        p.axis = 1;
        p.rows_padded = rows;
        return plan_softmax_columns(p, t, options, m);
    }
    const int64_t cp = p.cols_padded;
    RowTileWork w;
    w.family = "softmax";
    w.cols = cols;
    w.rows = rows;
    w.max_tile_rows = 32;
    w.buffered_bytes_per_row = cp * 2 * t.bytes();          // the input and the result
    w.fixed_bytes_per_row = cp * 4 + 2 * m.stick_bytes;     // exp (f32) and the max and sum
    w.read_bytes_per_row = w.write_bytes_per_row = (double)cp * t.bytes();
    // Per row on the SFU: the max and the sum across the row, exp(x - max) and the
    // product by 1/sum, and the casts of fp16; one instruction per row vector.
    const int vec = options.row_vectors ? planning::row_vector_lanes(p.cols_padded, p.in_lanes) : p.f32_lanes;
    const bool lane_steps = softmax_lane_steps(cols, t);
    // The row max and sum: one row reduction each, or (lane_steps) an elementwise op per stick
    // of the row (one instruction over the tile's rows each, so per row its share) and a row
    // reduction of one vector (the input's stick for the max, an f32 stick for the sum).
    const double reductions =
        lane_steps
            ? planning::sfu_row_cycles(p.cols_padded, vec, 4, MD::SfuCost::Simple) * 2 +
                  m.sfu_instruction_cycles(p.in_lanes, 1, 4, MD::SfuCost::RowReduce) +
                  m.sfu_instruction_cycles(p.f32_lanes, 1, 4, MD::SfuCost::RowReduce)
            : 2 * planning::sfu_row_cycles(p.cols_padded, vec, 4, MD::SfuCost::RowReduce);
    w.compute_cycles_per_row = reductions +
                               planning::sfu_row_cycles(p.cols_padded, vec, 4, MD::SfuCost::Transcendental) +
                               (2 + (t.bits() == 16 ? 2 : 0)) * planning::sfu_row_cycles(p.cols_padded, vec, 4, MD::SfuCost::Simple);
    if (lane_steps) w.fixed_bytes_per_row += (int64_t)(p.in_lanes + p.f32_lanes) * 4;  // the lane vectors
    take_row_tiles(plan_row_tiles(w, {options.max_cores, options.tile_rows, options.double_buffer}), &p);
    return p;
}

void schedule_softmax_host(SoftmaxFuncs f, const Target &target, int axis) {
    const int vec = target.natural_vector_size<float>();
    if (axis == 1) {
        // The column statistics at the root, along x; then exp and the result row by row.
        for (Func g : {f.max, f.sum}) {
            g.compute_root().vectorize(f.x, vec, TailStrategy::GuardWithIf);
            g.update().reorder(f.x, f.r.x).vectorize(f.x, vec, TailStrategy::GuardWithIf);
        }
        f.exp.compute_root().vectorize(f.x, vec, TailStrategy::GuardWithIf);
        f.out.parallel(f.y).vectorize(f.x, vec, TailStrategy::GuardWithIf);
        return;
    }
    Var yo("yo"), yi("yi");
    f.out.split(f.y, yo, yi, 8, TailStrategy::GuardWithIf).parallel(yo).vectorize(f.x, vec, TailStrategy::GuardWithIf);
    f.max.compute_at(f.out, yi);
    f.sum.compute_at(f.out, yi);
    if (f.lane_max.defined()) {
        f.lane_max.compute_at(f.out, yi);
        f.lane_sum.compute_at(f.out, yi);
    }
    f.exp.compute_at(f.out, yi).vectorize(f.x, vec, TailStrategy::GuardWithIf);
}

void schedule_softmax_spyre(SoftmaxFuncs f, Func in_staged, const SoftmaxSpyrePlan &p) {
    if (p.axis == 1) {
        // Tiles of columns across the cores; per tile, every row staged at once.
        const CoreSplit cores = split_across_cores(f.out, {{f.x, p.cols_padded, p.tile_cols, p.cores}});
        Var xo("xo"), xi("xi");
        f.out.split(cores.serial_of(f.x), xo, xi, p.tile_cols, TailStrategy::RoundUp).reorder(xi, f.y, xo);
        stick_vectorize(f.out, xi);
        stage_in_scratchpad(in_staged, f.out, xo, p.double_buffer);
        // The column max and sum: one SFU op over the rows each, lane by lane.
        for (Func g : {f.max, f.sum}) {
            g.compute_at(f.out, xo).store_in(MemoryType::VTCM).vectorize(f.x, p.tile_cols, TailStrategy::RoundUp);
            g.update().reorder(f.x, f.r.x).vectorize(f.x, p.tile_cols, TailStrategy::RoundUp);
        }
        f.exp.compute_at(f.out, xo).store_in(MemoryType::VTCM).vectorize(f.x, p.tile_cols, TailStrategy::RoundUp);
        f.result.compute_at(f.out, xo).store_in(MemoryType::VTCM).vectorize(f.x, p.tile_cols, TailStrategy::RoundUp);
        if (p.double_buffer) double_buffer_result(f.result);
        return;
    }
    const RowTileLoops loops = split_row_tiles_across_cores(f.out, f.x, f.y, p.rows_padded, p.cores, p.tile_rows, p.in_lanes);
    const Var &yo = loops.yo;
    stage_in_scratchpad(in_staged, f.out, yo, p.double_buffer);  // double buffered: the next tile's DMA overlaps this tile's SFU work
    for (Func g : {f.max, f.sum}) g.compute_at(f.out, yo).store_in(MemoryType::VTCM);
    if (f.lane_max.defined()) {
        // Per stick of the row, the lanes' running max (sum): one SFU op per stick over the
        // tile's rows; then one row reduction of the lane vector per row.
        const int lanes[2] = {p.in_lanes, p.f32_lanes};
        const Func lane[2] = {f.lane_max, f.lane_sum};
        const RDom rs[2] = {f.rs_max, f.rs_sum};
        const RDom rl[2] = {f.rl_max, f.rl_sum};
        const Func stat[2] = {f.max, f.sum};
        for (int i = 0; i < 2; i++) {
            Func g = lane[i];
            g.bound(f.l, 0, lanes[i]);
            g.compute_at(f.out, yo).store_in(MemoryType::VTCM).vectorize(f.l, lanes[i]);
            g.update().reorder(f.l, f.y, rs[i].x).vectorize(f.l, lanes[i]);
            Func(stat[i]).update().reorder(rl[i].x, f.y);
        }
    }
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
