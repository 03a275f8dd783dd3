// Schedules of softmax (see softmax_schedule.h).
#include "softmax_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <stdexcept>

#include "spyre/machine.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

SoftmaxSpyrePlan plan_softmax_spyre(int cols, int rows, const Type &t, const SoftmaxSpyreOptions &options) {
    const MachineDescription &m = default_machine();
    SoftmaxSpyrePlan p;
    p.cols = cols;
    p.rows = rows;
    p.in_lanes = (int)(m.stick_bytes / t.bytes());
    p.f32_lanes = (int)(m.stick_bytes / 4);
    p.cols_padded = (cols + p.in_lanes - 1) / p.in_lanes * p.in_lanes;
    // Per row in scratchpad: the input, exp (f32), the result, plus two scalars.
    const int copies = options.double_buffer ? 2 : 1;  // of the input and result tiles
    const int64_t per_row = (int64_t)p.cols_padded * (copies * t.bytes() + 4 + copies * t.bytes()) + 2 * m.stick_bytes;
    const int64_t budget = m.scratchpad_bytes * 3 / 4;  // room for the SFU temporaries
    if (per_row > budget) {
        throw std::runtime_error("softmax: a row of " + std::to_string(cols) + " elements does not fit the scratchpad (" +
                                 std::to_string(per_row) + " bytes per row)");
    }
    // Every core gets rows (up to max_cores of them, one row at least each), in
    // tiles of at most 32 rows that fit the scratchpad; the tile is the one that
    // pads a core's rows least (the largest of those), so no tile size that
    // leaves the row count without useful divisors can strand the work on a
    // few cores. Rows are padded to cores x tiles x tile_rows.
    const int max_cores = usable_cores(options.max_cores);
    const int fit = (int)std::min<int64_t>(32, budget / per_row);
    p.cores = std::max(1, std::min(max_cores, rows));
    const int per_core = (rows + p.cores - 1) / p.cores;
    int tile = 1;
    if (options.tile_rows > 0) {
        tile = (int)std::min<int64_t>(options.tile_rows, budget / per_row);
    } else {
        int best_padded = 0;
        for (int t = 1; t <= std::min(fit, per_core); t++) {
            const int padded = (per_core + t - 1) / t * t;
            if (best_padded == 0 || padded <= best_padded) best_padded = padded, tile = t;
        }
    }
    p.tile_rows = tile;
    const int tiles_per_core = (per_core + tile - 1) / tile;
    p.rows_padded = p.cores * tiles_per_core * tile;
    // Fewer cores while the last one would hold only padding rows.
    while (p.cores > 1 && (int64_t)(p.cores - 1) * tiles_per_core * tile >= rows) {
        p.cores--;
        p.rows_padded = p.cores * tiles_per_core * tile;
    }
    p.footprint_bytes = per_row * tile;
    p.row_vectors = options.row_vectors;
    p.double_buffer = options.double_buffer;
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
    // instead of one per stick (up to kPlannerSfuVectorLanes lanes; longer rows loop).
    const int row_vector =
        p.row_vectors ? std::min(p.cols_padded, kPlannerSfuVectorLanes / p.in_lanes * p.in_lanes) : p.in_lanes;
    f.exp.compute_at(f.out, yo).store_in(MemoryType::VTCM).vectorize(f.x, p.row_vectors ? row_vector : p.f32_lanes,
                                                                      TailStrategy::RoundUp);
    f.result.compute_at(f.out, yo).store_in(MemoryType::VTCM).vectorize(f.x, row_vector, TailStrategy::RoundUp);
    if (p.double_buffer) double_buffer_result(f.result);  // this tile's store overlaps the next tile's SFU work
}

}  // namespace spyre
