// Schedules of layernorm and rmsnorm (see norm_schedule.h).
#include "norm_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <stdexcept>

#include "spyre/machine.h"
#include "planner.h"
#include "row_tile_planner.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

namespace {

constexpr int kSfuTemps = 5;        // row temporaries of the result expression
constexpr int kInverseRmsChunkRows = 2;  // output=inverse_rms: rows staged at once within a tile

}  // namespace

// A row of the norm for the row-tile planner (row_tile_planner.h; tiles of at most
// 64 rows, the tensors padded to whole tiles only). Per core, once: the weight (and
// bias) as staged and widened to float32, the SFU temporaries; per row: the input
// and the result (double-buffered), centered (layernorm) and squares (float32), the
// per-row scalars.
NormSpyrePlan plan_norm_spyre(int cols, int rows, const Type &t, bool centered, const NormSpyreOptions &options,
                              bool inverse_rms) {
    using MD = MachineDescription;
    const MachineDescription &m = scheduling_machine();
    NormSpyrePlan p;
    p.cols = cols;
    p.rows = rows;
    p.in_lanes = (int)(m.stick_bytes / t.bytes());
    p.cols_padded = (cols + p.in_lanes - 1) / p.in_lanes * p.in_lanes;
    p.row_vector = planning::row_vector_lanes(p.cols_padded, p.in_lanes);
    const int64_t cp = p.cols_padded;
    RowTileWork w;
    w.family = "norm";
    w.cols = cols;
    w.rows = rows;
    w.max_tile_rows = 64;
    w.padding = RowPadding::WholeTiles;
    w.fixed_bytes_per_core = cp * (t.bytes() + 4) * (centered ? 2 : 1) + (int64_t)kSfuTemps * p.row_vector * 4;
    w.buffered_bytes_per_row = cp * 2 * t.bytes();
    w.fixed_bytes_per_row = cp * ((centered ? 4 : 0) + 4) + 4 * 4;
    w.read_bytes_per_row = w.write_bytes_per_row = (double)cp * t.bytes();
    w.read_bytes_per_core = (double)cp * t.bytes() * (centered ? 2 : 1);
    // Per row on the SFU: the sums across the row (and the centering), the squares,
    // the scaling by the inverse, the weight (and bias), the casts of fp16.
    const int vec = p.row_vector;
    w.compute_cycles_per_row = (centered ? 2 : 1) * planning::sfu_row_cycles(p.cols_padded, vec, 4, MD::SfuCost::RowReduce) +
                               ((centered ? 5 : 3) + (t.bits() == 16 ? 2 : 0)) *
                                   planning::sfu_row_cycles(p.cols_padded, vec, 4, MD::SfuCost::Simple);
    if (inverse_rms) {
        // The statistics alone: no weight; a tile is a stick of float32 results. The input
        // and its squares are staged kInverseRmsChunkRows rows at a time (the input in two
        // copies), once per core whatever the tile; per row of the tile its sum of squares,
        // its result and the result's second copy. Per row on the SFU: the squares (after
        // the cast of fp16), their sum.
        p.inverse_rms = true;
        w.tile_rows_multiple = stick_lanes(Float(32));
        w.max_tile_rows = std::max(w.max_tile_rows, w.tile_rows_multiple);
        w.fixed_bytes_per_core = (int64_t)kSfuTemps * p.row_vector * 4 + (int64_t)kInverseRmsChunkRows * cp * (2 * t.bytes() + 4);
        if (w.fixed_bytes_per_core >= planning::scratchpad_budget()) {
            throw std::runtime_error("rmsnorm output=inverse_rms: " + std::to_string(kInverseRmsChunkRows) + " rows of " +
                                     std::to_string(cols) + " elements staged at a time with their squares (" +
                                     std::to_string(w.fixed_bytes_per_core) + " bytes) do not fit the scratchpad (" +
                                     std::to_string(planning::scratchpad_budget()) + " bytes)");
        }
        w.buffered_bytes_per_row = 4;
        w.fixed_bytes_per_row = 4 * 4;
        w.write_bytes_per_row = 4;
        w.read_bytes_per_core = 0;
        w.compute_cycles_per_row = planning::sfu_row_cycles(p.cols_padded, vec, 4, MD::SfuCost::RowReduce) +
                                   (1 + (t.bits() == 16 ? 1 : 0)) * planning::sfu_row_cycles(p.cols_padded, vec, 4, MD::SfuCost::Simple);
    }
    take_row_tiles(plan_row_tiles(w, {options.max_cores, options.tile_rows, options.double_buffer}), &p);
    return p;
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

void schedule_inverse_rms_host(NormFuncs f, const Target &target) {
    const int vec = target.natural_vector_size<float>();
    Var yo("yo"), yi("yi");
    f.out.split(f.y, yo, yi, 8, TailStrategy::GuardWithIf).parallel(yo);
    for (Func g : {f.sumsq, f.inv, f.result}) g.compute_at(f.out, yi);
    f.sq.compute_at(f.out, yi).vectorize(f.x, vec, TailStrategy::GuardWithIf);
    f.sq.update().vectorize(f.x, vec, TailStrategy::GuardWithIf);
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

void schedule_inverse_rms_spyre(NormFuncs f, Func in_staged, const NormSpyrePlan &p) {
    _halide_user_assert(p.inverse_rms && p.rows_padded % ((int64_t)p.cores * p.tile_rows) == 0)
        << "inverse_rms Spyre schedule: the plan is not an inverse_rms plan dividing the padded rows";
    Var yr("yr"), core("core"), yo("yo"), yi("yi");
    f.out.split(f.y, core, yr, p.rows_padded / p.cores, TailStrategy::RoundUp)
        .split(yr, yo, yi, p.tile_rows, TailStrategy::RoundUp)
        .parallel(core);
    stick_vectorize(f.out, yi);
    // Per tile of rows: the input (DMA), the squares and their row sums, the results
    // (one vector over the tile's rows), stored as a stick.
    for (Func g : {f.sumsq, f.inv}) g.compute_at(f.out, yo).store_in(MemoryType::VTCM);
    Var yc("yc"), yci("yci");
    const int chunk = kInverseRmsChunkRows;
    f.sumsq.update().split(f.y, yc, yci, chunk, TailStrategy::RoundUp);
    stage_in_scratchpad(in_staged, f.sumsq, yc, p.double_buffer);
    f.sq.compute_at(f.sumsq, yc).store_in(MemoryType::VTCM).vectorize(f.x, p.row_vector, TailStrategy::RoundUp);
    f.sq.update().vectorize(f.x, p.row_vector, TailStrategy::RoundUp);
    f.result.compute_at(f.out, yo).store_in(MemoryType::VTCM).vectorize(f.y, p.tile_rows, TailStrategy::RoundUp);
    if (p.double_buffer) double_buffer_result(f.result);
}

}  // namespace spyre
