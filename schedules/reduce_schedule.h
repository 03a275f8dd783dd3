// Schedules of the reductions (generators/reduce_generator.cpp): sum, mean or
// max of a 3-D tensor in(x, y, z) over one axis; the output keeps the other two
// dims in order, out(u, v). fp16 inputs widen to fp32 (wide(x, y, z)), the
// accumulator acc(u, v) is fp32, the result rounds once.
//
// schedule_reduce_host: the CPU reference (serial reduction, vectorized u).
// schedule_reduce_spyre: the output split across the cores (v, then tiles of u).
//   axis 0 (along the sticks): per tile of `tile` rows of y, `chunk` rows at a
//     time: stage them (DMA), one sfu.rowsum / sfu.rowmax per row into a
//     scalar per row; then cast (SFU) and store the tile (DMA). Rows of whole
//     sticks (reduce_lane_steps) are reduced in two steps instead: per stick of the
//     rows one SFU op over the chunk's rows, lane by lane, then one sfu.rowsum /
//     rowmax of a stick per row.
//   axes 1, 2 (across sticks): per tile of `tile` lanes of x, for each chunk of
//     `chunk` rows of the reduced axis: stage it (DMA; fp16 widened by one SFU
//     cast), acc[x] = acc[x] + wide[x, r] as one SFU add over the chunk's rows;
//     then cast and store the tile.
//   With plan.cores_r > 1 (axes 1, 2, small outputs): the reduced axis is split
//   over the cores instead (rfactor): core c reduces rows [c*R, (c+1)*R) in
//   chunks into its part of a distributed scratchpad buffer; core 0 gathers the
//   parts over the ring, combines them (SFU), casts and stores the output.
#pragma once

#include <string>

#include "Halide.h"
#include "schedule_knobs.h"

namespace spyre {

struct ReduceFuncs {
    Halide::Func out;     // out(u, v) = result(u, v)
    Halide::Func result;  // cast(dtype, acc [/ n])
    Halide::Func acc;     // fp32: acc = identity; acc = acc (+|max) wide(..r..)
    Halide::Func wide;    // wide(x, y, z) = cast<float>(in(x, y, z)) (a copy of in for fp32)
    Halide::RDom r;       // the reduced axis, true extent
    Halide::Var u, v;     // the output dims
    Halide::Var x;        // wide's dim 0 (the stick dimension)
    // Axis 0 with rows of whole sticks (reduce_lane_steps; else undefined):
    // lane(l, u, v) reduces the row's sticks lane by lane (rs), then acc reduces lane's one stick
    // per row (rl_lane): a row reduction costs the SFU 17x an elementwise op per stick.
    Halide::Func lane;
    Halide::RDom rs, rl_lane;
};

struct ReduceShape {
    int d0 = 1, d1 = 1, d2 = 1;
    Halide::Type dtype;
    std::string op;  // sum, mean, max
    int axis = 0;

    int extent(int d) const { return d == 0 ? d0 : d == 1 ? d1 : d2; }
    int reduced() const { return extent(axis); }
    // The output's dims: the input dims other than `axis`, in order.
    int kept(int i) const { return i == 0 ? (axis == 0 ? 1 : 0) : (axis == 2 ? 1 : 2); }
};

struct ReduceSpyrePlan {
    int in_lanes = 0;      // stick lanes of the dtype (input and output)
    int tile = 0;          // per core step: axis 0: rows of y; axes 1, 2: lanes of x (whole sticks)
    int u_padded = 0;      // out dim 0 padded to `tile` (axis 0: y; else x)
    int chunk = 0;         // rows per staged chunk: axis 0 rows of y (divides tile); axes 1, 2 rows of the reduced axis (divides it)
    int cores_u = 1, cores_v = 1;
    // Axes 1, 2: cores along the reduced axis (> 1: each reduces n / cores_r rows into its part of a
    // distributed buffer, core 0 combines the parts after gathering them over the ring).
    int cores_r = 1;
    int64_t footprint_bytes = 0;
    bool double_buffer = false;  // the staged input (and the result tile, unless axis 0 stages chunks of it) in two copies
    double estimated_us = 0;     // the planning framework's estimate of the kernel (schedules/planner.h)

    int cores() const { return cores_u * cores_v * cores_r; }
};

// Knobs of the Spyre schedule (GeneratorParams of gen_reduce).
// X(type, name, default, what it does, the autoscheduler's candidates; schedule_knobs.h)
#define SPYRE_REDUCE_KNOBS(X) \
    X(bool, double_buffer, true, "staged input and result in two copies when they fit: DMA overlaps the SFU", spyre::knob_bools) \
    X(int, max_cores, 0, "use at most this many cores (0: all the machine's cores)", spyre::knob_core_counts) \
    X(int, tile, 0, "lanes of the output's dim 0 per tile, whole sticks (0: chosen by the planner)", spyre::knob_from_shape) \
    X(int, chunk, 0, "rows per staged chunk (0: chosen): axis 0 rows of y, dividing the tile; axes 1, 2 rows of the reduced axis, dividing it", spyre::knob_from_shape) \
    X(int, reduce_cores, 0, "axes 1, 2: cores along the reduced axis (0: chosen, 1: none; must divide it)", {0, 1})

struct ReduceSpyreOptions {
    SPYRE_KNOB_MEMBERS(SPYRE_REDUCE_KNOBS)
};

// Whether axis 0 reduces rows in two steps (rows of whole sticks, more than one):
// the generator and the planner agree through this.
bool reduce_lane_steps(const ReduceShape &shape);

// Throws std::runtime_error if one tile (or the forced tile and chunk) does not
// fit the scratchpad, or a forced tile or chunk does not divide. Candidates
// are judged, costed and chosen by the planning framework (schedules/planner.h):
// double buffering counts the staged input (and the result) twice and is used
// only when the loop that stages them has an even trip count.
ReduceSpyrePlan plan_reduce_spyre(const ReduceShape &shape, const ReduceSpyreOptions &options = {});

void schedule_reduce_host(ReduceFuncs f, const ReduceShape &shape, const Halide::Target &target);
// in_staged: in.in() (the DMA stage), or undefined when fp32 axes 1, 2 stage `wide` itself.
void schedule_reduce_spyre(ReduceFuncs f, Halide::Func in_staged, const ReduceShape &shape, const ReduceSpyrePlan &plan);

}  // namespace spyre
