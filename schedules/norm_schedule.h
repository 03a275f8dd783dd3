// Schedules of the row normalizations (generators/layernorm_generator.cpp,
// generators/rmsnorm_generator.cpp), kept apart from the algorithms.
//
// Both normalize each row (the innermost, stick dimension x) of a 2-D tensor:
//   layernorm: out = (v - mean) * inv * weight + bias,  inv = 1 / sqrt(var + eps)
//   rmsnorm:   out = v * inv * weight,                  inv = 1 / sqrt(mean(v^2) + eps)
// with v = float32(in); the statistics run over the true row length only.
//
// Spyre: rows are split across the cores (even divisors of the row tiles);
// per core the weight (and bias) are staged once and widened to float32; for
// each tile of `tile_rows` rows: stage the input tile (DMA), row sum
// (sfu.rowsum) and mean, centered row (SFU), squares and their row sum,
// the per-row scale inv (scalar SFU ops with the run-time eps), the scaled,
// cast result (SFU), store the tile (DMA). Rows are SFU vectors of up to sfu_max_vector_lanes() lanes (schedule_arithmetic.h).
// Host: rows in parallel, vectorized along the row.
#pragma once

#include "Halide.h"
#include "schedule_knobs.h"

namespace spyre {

// The Funcs of a normalization. `sum`, `mean`, `centered` and `bias_f` are
// undefined for rmsnorm (no centering, no bias).
struct NormFuncs {
    Halide::Func out, result;     // out = result = cast(dtype, ...)
    Halide::Func sum, mean;       // row sum of v and mean (layernorm)
    Halide::Func centered;        // v - mean (layernorm)
    Halide::Func sq, sumsq, inv;  // squares, their row sum, 1 / sqrt(sumsq / N + eps)
    Halide::Func weight_f, bias_f;  // weight and bias widened to float32
    Halide::Var x, y;
};

struct NormSpyrePlan {
    int cols = 0, rows = 0;
    int cols_padded = 0;   // whole sticks of the input type
    int tile_rows = 1;     // rows per scratchpad tile
    int rows_padded = 0;   // multiple of tile_rows
    int cores = 1;         // cores used (divides the row tiles)
    int in_lanes = 0;      // stick lanes of the input type
    int row_vector = 0;    // SFU vector length along a row (divides cols_padded)
    int64_t footprint_bytes = 0;  // estimated scratchpad bytes per core
    double estimated_us = 0;      // the planning framework's estimate of the kernel (schedules/planner.h)
    bool double_buffer = false;   // input and result tiles in two copies
    bool inverse_rms = false;     // the output is the rows' 1 / rms alone (gen_rmsnorm output=inverse_rms)
};

// Knobs of the Spyre schedule (GeneratorParams of gen_layernorm / gen_rmsnorm).
// X(type, name, default, what it does, the autoscheduler's candidates; schedule_knobs.h)
#define SPYRE_NORM_KNOBS(X) \
    X(int, max_cores, 0, "use at most this many cores (0: all the machine's cores)", spyre::knob_core_counts) \
    X(bool, double_buffer, true, "input and result tiles in two copies when they fit: DMA overlaps the SFU", spyre::knob_bools) \
    X(int, tile_rows, 0, "rows per scratchpad tile (0: automatic); rows are padded to whole tiles", spyre::knob_from_shape)

struct NormSpyreOptions {
    SPYRE_KNOB_MEMBERS(SPYRE_NORM_KNOBS)
};

// Tiles and core split for `cols` x `rows` of `t` through the planning
// framework (schedules/planner.h); `centered` is true for layernorm (one more
// float32 row per tile). Throws if a row, or a forced tile_rows, does not fit.
// inverse_rms: the kernel writes only 1 / rms per row, float32, packed along
// sticks (gen_rmsnorm output=inverse_rms): tiles are whole sticks of rows (32).
NormSpyrePlan plan_norm_spyre(int cols, int rows, const Halide::Type &t, bool centered,
                              const NormSpyreOptions &options = {}, bool inverse_rms = false);

void schedule_norm_host(NormFuncs f, const Halide::Target &target);
void schedule_inverse_rms_host(NormFuncs f, const Halide::Target &target);
// in_staged, weight_in, bias_in: the input wrappers (in.in(), ...); bias_in is
// undefined for rmsnorm. weight_in/bias_in are only staged for float16 (for
// float32 weight_f is itself a copy of the input, i.e. a DMA).
void schedule_norm_spyre(NormFuncs f, Halide::Func in_staged, Halide::Func weight_in, Halide::Func bias_in,
                         const Halide::Type &t, const NormSpyrePlan &plan);
// gen_rmsnorm output=inverse_rms: out(y) = inv(y), a tile of rows per step (one
// stick of results), the row statistics per tile in the scratchpad.
void schedule_inverse_rms_spyre(NormFuncs f, Halide::Func in_staged, const NormSpyrePlan &plan);

}  // namespace spyre
