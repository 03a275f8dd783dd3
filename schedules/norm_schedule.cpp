// Schedules of layernorm and rmsnorm (see norm_schedule.h).
#include "norm_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "spyre/machine.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

namespace {

constexpr int kSfuTemps = 5;        // row temporaries of the result expression

// The longest whole-stick vector (<= kPlannerSfuVectorLanes) that divides the padded row.
int choose_row_vector(int cols_padded, int lanes) {
    int best = lanes;
    for (int v = lanes; v <= std::min(cols_padded, kPlannerSfuVectorLanes); v += lanes) {
        if (cols_padded % v == 0) best = v;
    }
    return best;
}

}  // namespace

NormSpyrePlan plan_norm_spyre(int cols, int rows, const Type &t, bool centered, const NormSpyreOptions &options) {
    const MachineDescription &m = default_machine();
    NormSpyrePlan p;
    p.cols = cols;
    p.rows = rows;
    p.in_lanes = (int)(m.stick_bytes / t.bytes());
    p.cols_padded = (cols + p.in_lanes - 1) / p.in_lanes * p.in_lanes;
    p.row_vector = choose_row_vector(p.cols_padded, p.in_lanes);
    const int64_t cp = p.cols_padded;
    // Per core, once: weight (and bias) as staged and widened to float32.
    const int64_t per_core = cp * (t.bytes() + 4) * (centered ? 2 : 1) + (int64_t)kSfuTemps * p.row_vector * 4;
    // Per row: the input, centered (layernorm), squares (float32), the result,
    // and the per-row scalars (a stick each at most).
    // Double buffered: the input and result rows in two copies (one copy if two do not fit).
    const int64_t per_row_single = cp * (t.bytes() + (centered ? 4 : 0) + 4 + t.bytes()) + 4 * 4;
    const int64_t budget = m.scratchpad_bytes * 7 / 8 - per_core;
    const int64_t per_row_double = per_row_single + cp * 2 * t.bytes();
    const bool db = options.double_buffer && per_row_double <= budget && rows >= 2;
    const int64_t per_row = db ? per_row_double : per_row_single;
    if (per_row > budget) {
        throw std::runtime_error("norm: a row of " + std::to_string(cols) + " elements does not fit the scratchpad (" +
                                 std::to_string(per_row) + " bytes per row, " + std::to_string(budget) + " available)");
    }
    // Every core gets the same number of equal tiles, as large as fit (fewer,
    // larger DMAs); the rows are padded up to that. The core count trades the
    // padded rows (DRAM traffic, shared by all cores) against the rows per core
    // (SFU time, which does not overlap the DMA: about a tenth of it at 32 cores).
    const int max_tile = (int)std::min<int64_t>(64, budget / per_row);
    double best = 0;
    const int max_cores = usable_cores(options.max_cores);
    bool tile_db = db;  // double buffering, given the rows per tile
    if (options.tile_rows > 0) {
        // A forced tile: double-buffered if that many rows fit twice, else single.
        _halide_user_assert(options.tile_rows <= budget / per_row_single)
            << "norm Spyre schedule: tile_rows=" << options.tile_rows << " rows of " << cols
            << " elements do not fit the scratchpad (at most " << budget / per_row_single << " rows per tile)";
        tile_db = db && options.tile_rows <= budget / per_row_double;
        // Rows padded to whole tiles; the most cores that divide the tiles evenly.
        p.tile_rows = options.tile_rows;
        p.rows_padded = (rows + p.tile_rows - 1) / p.tile_rows * p.tile_rows;
        const int tiles = p.rows_padded / p.tile_rows;
        for (int c = 1; c <= std::min(tiles, max_cores); c++) {
            if (tiles % c == 0) p.cores = c;
        }
    }
    for (int c = 1; options.tile_rows == 0 && c <= std::min<int>(rows, max_cores); c++) {
        const int rows_per_core = (rows + c - 1) / c;
        int tiles_per_core = (rows_per_core + max_tile - 1) / max_tile;
        // The backend double-buffers only an even staging loop: one more, smaller tile if
        // odd, unless that pads the rows by a whole tile (the tensor is padded to tiles only).
        if (db && tiles_per_core % 2 != 0 && rows_per_core > tiles_per_core) {
            const int t = (rows_per_core + tiles_per_core) / (tiles_per_core + 1);
            if ((rows + t - 1) / t * t == t * (tiles_per_core + 1) * c) tiles_per_core++;
        }
        const int tile = (rows_per_core + tiles_per_core - 1) / tiles_per_core;
        const int padded = tile * tiles_per_core * c;
        const double cost = padded * (1.0 + 0.1 * (double)m.cores / c);
        if (c == 1 || cost <= best) {
            best = cost;
            p.cores = c;
            p.tile_rows = tile;
            p.rows_padded = padded;
        }
    }
    p.double_buffer = tile_db && (p.rows_padded / p.cores / p.tile_rows) % 2 == 0;
    p.footprint_bytes = (p.double_buffer ? per_row_double : per_row_single) * p.tile_rows + per_core;
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
