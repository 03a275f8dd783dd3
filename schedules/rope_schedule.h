// Schedules of rotary position embedding, rotate-half form (generators/rope_generator.cpp):
//   out(i, h, t)        = x(i, h, t) cos(i, t) - x(i + half, h, t) sin(i, t)
//   out(i + half, h, t) = x(i + half, h, t) cos(i, t) + x(i, h, t) sin(i, t),  i < half = d / 2.
// fp16 computes in fp32 and rounds once.
//
// schedule_rope_host: the CPU reference (tokens in parallel).
// schedule_rope_spyre: (tokens, heads) split across the cores; per core, per
//   tile of `tile_tokens` tokens: the x tile (all the core's heads) and the cos
//   and sin rows of those tokens copied into the scratchpad (DMA), the two
//   halves of the result computed on the SFU, each half a whole-stick vector
//   (half must be a whole number of sticks: d = 128 in fp16 or fp32), and one
//   DMA of the result tile.
#pragma once

#include "Halide.h"
#include "schedule_knobs.h"

namespace spyre {

struct RopeFuncs {
    Halide::Func out;     // out(d, h, t) = result(d, h, t)
    Halide::Func result;  // undefined pure step; update 0: the first half, update 1: the second (RDom r over half)
    Halide::Func x_in, cos_in, sin_in;  // input wrappers (Spyre: staged by DMA)
    Halide::RDom r;       // over the half
    Halide::Var d, h, t;
};

struct RopeSpyrePlan {
    int d = 0, heads = 0, tokens = 0;
    int lanes = 0;            // stick lanes of the dtype
    int tile_tokens = 1;      // tokens per scratchpad tile
    int tokens_padded = 0;    // tokens padded to whole tiles
    int ct = 1, ch = 1;       // cores along tokens and heads
    int64_t footprint_bytes = 0;
    double estimated_us = 0;      // the planning framework's estimate of the kernel (schedules/planner.h)
    bool double_buffer = false;  // x, cos, sin and result tiles in two copies

    int cores() const { return ct * ch; }
};

// Knobs of the Spyre schedule (GeneratorParams of gen_rope).
// X(type, name, default, what it does, the autoscheduler's candidates; schedule_knobs.h)
#define SPYRE_ROPE_KNOBS(X) \
    X(int, max_cores, 0, "0: the machine's core count", spyre::knob_core_counts) \
    X(bool, double_buffer, true, "when it fits and each core has an even number of tiles", spyre::knob_bools) \
    X(int, tile_tokens, 0, "tokens per tile (0: chosen by the planner)", spyre::knob_from_shape)

struct RopeSpyreOptions {
    SPYRE_KNOB_MEMBERS(SPYRE_ROPE_KNOBS)
};

// Plans through the planning framework (schedules/planner.h). Throws
// std::runtime_error when half is not whole sticks of `t` or a tile does not fit.
RopeSpyrePlan plan_rope_spyre(int d, int heads, int tokens, const Halide::Type &t, const RopeSpyreOptions &options = {});

void schedule_rope_host(RopeFuncs f, const Halide::Target &target);
void schedule_rope_spyre(RopeFuncs f, const RopeSpyrePlan &plan);

}  // namespace spyre
