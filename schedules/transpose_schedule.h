// Schedules of the transpose out(y, x[, b]) = in(x, y[, b])
// (generators/transpose_generator.cpp): a re-layout that moves the stick
// dimension ("restickify": in is sticked along x, out along y).
//
// Spyre: square tiles of T x T elements (T a multiple of the stick lanes),
// split across the cores by (batch, y tiles, x tiles); per core, per tile:
//   stage the input tile (dma.load, T rows of T elements),
//   build the transposed tile in scratchpad: each of its rows is a strided
//   read of a column of the staged tile (an SFU gather of rows of one
//   element each, one instruction per row when T fits one SFU vector,
//   transposed_gather_sticks),
//   store the transposed tile (dma.store, T rows of T elements).
// Host: 2-D tiles, vectorized along y of the output.
#pragma once

#include "Halide.h"
#include "schedule_knobs.h"

namespace spyre {

struct TransposeFuncs {
    Halide::Func out;         // out(y, x, [b]) = transposed(y, x, [b])
    Halide::Func transposed;  // transposed(y, x, [b]) = in(x, y, [b])
    Halide::Var y, x, b;      // b is unused for 2-D tensors
    bool batched = false;
};

struct TransposeSpyrePlan {
    int x = 0, y = 0, batch = 1;  // true extents of in (x innermost); batch 1 for 2-D
    int tile = 0;                 // T: tile edge, a multiple of the stick lanes
    int xp = 0, yp = 0;           // padded extents (multiples of T)
    int lanes = 0;                // stick lanes of the element type
    int cb = 1, cy = 1, cx = 1;   // cores along batch, y tiles, x tiles
    int64_t footprint_bytes = 0;  // scratchpad bytes per core
    double estimated_us = 0;      // the planning framework's estimate of the kernel (schedules/planner.h)
    bool double_buffer = false;   // staged and transposed tiles in two copies

    int cores() const { return cb * cy * cx; }
};

// Sticks per SFU gather of the transposed tile: a whole row of the tile (tile / lanes
// sticks, one instruction per row) within the machine's sfu_max_vector_lanes.
int transposed_gather_sticks(const TransposeSpyrePlan &p);

// Knobs of the Spyre schedule (GeneratorParams of gen_transpose).
// X(type, name, default, what it does, the autoscheduler's candidates; schedule_knobs.h)
#define SPYRE_TRANSPOSE_KNOBS(X) \
    X(int, max_cores, 0, "use at most this many cores, cb * cy * cx (0: all the machine's cores)", spyre::knob_core_counts) \
    X(bool, double_buffer, true, "tiles in two copies: the next tile's load and this tile's store overlap the gathers", spyre::knob_bools) \
    X(int, tile, 0, "tile edge T (0: automatic; rounded up to whole sticks)", spyre::knob_from_shape)

struct TransposeSpyreOptions {
    SPYRE_KNOB_MEMBERS(SPYRE_TRANSPOSE_KNOBS)
};

// Tiles and core split for an X x Y (x batch) tensor of `t` through the
// planning framework (schedules/planner.h: double buffering when the staging
// loop is even and both copies fit). Throws Halide::CompileError if a forced
// tile does not fit the scratchpad or the hardware loop levels.
TransposeSpyrePlan plan_transpose_spyre(int x, int y, int batch, const Halide::Type &t,
                                        const TransposeSpyreOptions &options = {});

void schedule_transpose_host(TransposeFuncs f, const Halide::Target &target);
// in_staged: the input wrapper (in.in()), staged in the scratchpad by DMA.
void schedule_transpose_spyre(TransposeFuncs f, Halide::Func in_staged, const TransposeSpyrePlan &plan);

}  // namespace spyre
