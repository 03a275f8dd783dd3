// Schedules of softmax (generators/softmax_generator.cpp), over the innermost
// dimension x (axis 0) or over the rows y (axis 1).
//
// Spyre, axis 0: rows are split evenly across the cores (padded to whole tiles on
// every core, with the tile that pads least);
// per core, for each tile of `tile_rows` rows: stage the input tile in
// scratchpad (DMA), row max (sfu.rowmax), exp(x - max) (SFU), row sum
// (sfu.rowsum), divide and cast (SFU), store the tile (DMA). Rows of whole
// sticks take the max and the sum in two steps (SoftmaxFuncs::lane_max).
// Spyre, axis 1: columns in tiles of `tile_cols` lanes (whole sticks) split
// evenly across the cores; per core, for each tile: stage all the rows of its
// columns (DMA), the column max and sum as one SFU max / add over the rows
// (lane by lane, no row reduction), exp(x - max), divide and cast (SFU), store
// (DMA). A tile holds every row, so the rows are limited by the scratchpad.
// Host: rows in parallel, vectorized along the row (axis 1: the statistics at
// the root, vectorized along x).
#pragma once

#include "Halide.h"
#include "schedule_knobs.h"

namespace spyre {

struct SoftmaxFuncs {
    Halide::Func out, result, exp, max, sum;
    Halide::Var x, y;
    Halide::RDom r;  // the reduced dimension's true extent (axis 0: x, axis 1: y)
    // Axis 0 with rows of whole sticks (more than one): the row max and sum in two steps,
    // lane by lane over the row's sticks (lane_max(l, y) over the input's sticks, lane_sum(l, y)
    // over exp's f32 sticks; rs_max, rs_sum), then over one such vector's lanes (rl_max,
    // rl_sum), because a row reduction costs the SFU 17x an elementwise op per stick
    // (docs/scheduling.md, "Reductions"). Undefined otherwise (max and sum reduce the row).
    Halide::Func lane_max, lane_sum;
    Halide::RDom rs_max, rs_sum, rl_max, rl_sum;
    Halide::Var l;
};

struct SoftmaxSpyrePlan {
    int cols = 0, rows = 0;
    int axis = 0;          // 0: over x (each row), 1: over y (each column)
    int tile_cols = 0;     // axis 1: lanes of x per tile (whole sticks)
    int cols_padded = 0;   // whole sticks of the input type (axis 1: whole tiles)
    int tile_rows = 1;     // rows per scratchpad tile
    int rows_padded = 0;   // cores x (tiles per core) x tile_rows
    int cores = 1;         // cores used, each with the same number of row tiles
    int in_lanes = 0, f32_lanes = 0;
    int64_t footprint_bytes = 0;
    double estimated_us = 0;      // the planning framework's estimate of the kernel (schedules/planner.h)
    bool row_vectors = true;
    bool double_buffer = true;
};

// Whether softmax over rows of `cols` elements of `t` reduces them in two steps: rows of
// whole sticks, more than one (the generator and the planner agree through this).
bool softmax_lane_steps(int cols, const Halide::Type &t);

// Knobs of the Spyre schedule (GeneratorParams of gen_softmax); defaults are the hand schedule.
// X(type, name, default, what it does, the autoscheduler's candidates; schedule_knobs.h)
#define SPYRE_SOFTMAX_KNOBS(X) \
    X(int, max_cores, 0, "use at most this many cores (0: all the machine's cores)", spyre::knob_core_counts) \
    X(int, tile_rows, 0, "rows per scratchpad tile (0: automatic)", {0, 1, 2, 4, 8, 16, 32, 64}) \
    X(bool, row_vectors, true, "SFU vectors of a whole row (false: one stick per instruction)", spyre::knob_bools) \
    X(bool, double_buffer, true, "input and result tiles in two copies: DMA overlaps the SFU", spyre::knob_bools)

struct SoftmaxSpyreOptions {
    SPYRE_KNOB_MEMBERS(SPYRE_SOFTMAX_KNOBS)
};

// Tiles and core split for `cols` x `rows` of `t`, through the planning framework (schedules/planner.h).
// Axis 1 plans tiles of columns (max_cores and double_buffer apply; tile_rows and row_vectors
// are axis 0's) and throws std::runtime_error, saying so, when the rows of one stick of
// columns do not fit the scratchpad.
SoftmaxSpyrePlan plan_softmax_spyre(int cols, int rows, const Halide::Type &t, const SoftmaxSpyreOptions &options = {},
                                    int axis = 0);

void schedule_softmax_host(SoftmaxFuncs f, const Halide::Target &target, int axis = 0);
void schedule_softmax_spyre(SoftmaxFuncs f, Halide::Func in_staged, const SoftmaxSpyrePlan &plan);

}  // namespace spyre
