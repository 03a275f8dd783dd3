// Schedules of softmax (see softmax_schedule.h).
#include "softmax_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>

#include "spyre/machine.h"
#include "planner.h"
#include "row_tile_planner.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

// A row of softmax for the row-tile planner (row_tile_planner.h; tiles of at most
// 32 rows). Per row: the input and the result (double-buffered), exp (f32) and two
// scalars.
SoftmaxSpyrePlan plan_softmax_spyre(int cols, int rows, const Type &t, const SoftmaxSpyreOptions &options) {
    using MD = MachineDescription;
    const MachineDescription &m = scheduling_machine();
    SoftmaxSpyrePlan p;
    p.cols = cols;
    p.rows = rows;
    p.in_lanes = (int)(m.stick_bytes / t.bytes());
    p.f32_lanes = (int)(m.stick_bytes / 4);
    p.cols_padded = (cols + p.in_lanes - 1) / p.in_lanes * p.in_lanes;
    p.row_vectors = options.row_vectors;
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
    w.compute_cycles_per_row = 2 * planning::sfu_row_cycles(p.cols_padded, vec, 4, MD::SfuCost::RowReduce) +
                               planning::sfu_row_cycles(p.cols_padded, vec, 4, MD::SfuCost::Transcendental) +
                               (2 + (t.bits() == 16 ? 2 : 0)) * planning::sfu_row_cycles(p.cols_padded, vec, 4, MD::SfuCost::Simple);
    take_row_tiles(plan_row_tiles(w, {options.max_cores, options.tile_rows, options.double_buffer}), &p);
    return p;
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
