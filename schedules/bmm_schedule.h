// Schedules of the batched matmul C(n,m,b) = sum_k A(k,m,b) * B(n,k,b), or
// * B(n,k) when B is broadcast over the batch (generators/bmm_generator.cpp),
// kept apart from the algorithm.
//
// schedule_bmm_host: a CPU schedule for the host reference build.
// schedule_bmm_spyre: the shape the Spyre lowering pass compiles, per core
//   for bi, mo, no:   copy A tile, copy B tile (DRAM -> scratchpad),
//                     acc = 0, acc += A*B over k, result = cast(acc),
//                     copy the C tile (scratchpad -> DRAM)
// with one constant-extent parallel loop over the cores outside. With a
// shared A (plan.a_shared) the cores that differ only in their N range load
// each A tile once per chain and pass it along the ring (share_over_ring); with a
// shared B (plan.b_shared) the cores that differ only in their M range (and, with a
// broadcast B, their batch) do the same with B.
#pragma once

#include "Halide.h"
#include "schedule_knobs.h"

namespace spyre {

// The Funcs and Vars of the bmm algorithm that a schedule works on.
struct BmmFuncs {
    Halide::Func C;       // output C(n, m, b) = result(n, m, b)
    Halide::Func result;  // result(n, m, b) = cast(dtype, acc(n, m, b))
    Halide::Func acc;     // fp32 accumulator: acc = 0; acc += A(k,m,b) * B(n,k,b)
    Halide::RDom k;       // the reduction over the (padded) K
    Halide::Var n, m, b;
};

// The true extents and element type of a bmm.
struct BmmShape {
    int batch = 1, m = 1, n = 1, k = 1;
    Halide::Type dtype;
    bool broadcast_b = false;  // B is one n x k matrix for every batch (a 3-D @ 2-D product)

    // The product is one matmul (batch 1, or a B broadcast over the batch: batch x m rows).
    bool is_matmul() const { return batch == 1 || broadcast_b; }
};

// Tiles, padding and core split of the Spyre schedule for one shape.
struct BmmSpyrePlan {
    int tm = 0, tn = 0, tk = 0;  // tile sizes; tk == kp unless K is chunked
    int mp = 0, np = 0, kp = 0;  // padded extents (multiples of tm, tn and the input stick)
    int cb = 1, cm = 1, cn = 1;  // cores along batch, m and n
    int in_lanes = 0;            // stick lanes of the input dtype
    int out_lanes = 0;           // stick lanes of the output dtype
    int64_t footprint_bytes = 0; // scratchpad bytes per core (A, B tiles, acc, result)
    bool b_resident = false;     // each core's whole B slice (N range x K) stays in scratchpad: B is read once
    bool double_buffer = false;  // the staged (non-resident) input tiles have two copies
    bool a_shared = false;       // the cores of one batch and row range (cn > 1) pass A tiles along the ring
    bool b_shared = false;       // the cores of one batch and column range (cm > 1) pass B tiles along the ring;
                                 // with a broadcast B, the cores of one column range (cb x cm > 1)
    bool b_gathered = false;     // ... each loading a share of every B tile (RingForwarding::Gathered; costed as a matmul only)
    double estimated_us = 0;     // the planner's estimate (schedules/planner.h)

    bool k_chunked() const { return tk < kp; }
    int cores() const { return cb * cm * cn; }
};

// Knobs of the Spyre schedule (GeneratorParams of gen_bmm), for experiments and
// the schedule ladder in docs/performance.md. The defaults are the hand schedule.
// X(type, name, default, what it does, the autoscheduler's candidates; schedule_knobs.h)
#define SPYRE_BMM_KNOBS(X) \
    X(int, max_cores, 0, "use at most this many cores (0: all the machine's cores)", spyre::knob_core_counts) \
    X(int, tile_m, 0, "rows per output tile (0: automatic; rounded up to 8, the PT pass)", {0, 64, 128, 256}) \
    X(int, tile_n, 0, "columns per output tile (0: automatic; rounded up to whole sticks)", {0, 64, 128, 256, 512}) \
    X(int, tile_k, 0, "K chunk (0: automatic; rounded up to whole sticks, must divide the padded K)", spyre::knob_from_shape) \
    X(bool, resident_b, true, "keep each core's B slice in scratchpad when it fits", spyre::knob_bools) \
    X(bool, double_buffer, true, "staged A/B tiles in two copies when they fit: DMA overlaps the PT", spyre::knob_bools) \
    X(bool, share_a, true, "consider core splits along N whose cores share A tiles over the ring", spyre::knob_bools) \
    X(bool, share_b, true, "consider core splits along M whose cores share B tiles over the ring", spyre::knob_bools) \
    X(std::string, b_forwarding, "auto", "how a B chain's cores get each B tile at batch 1 or with a broadcast B (the plans costed as a matmul): whole, gathered or auto (gen_matmul's knob of the same name)", {"auto", "whole", "gathered"})

struct BmmSpyreOptions {
    SPYRE_KNOB_MEMBERS(SPYRE_BMM_KNOBS)
};

// Chooses the tiles and the core split for `shape` (machine sizes from the
// runtime's machine description). Throws Halide::CompileError if no K chunk fits,
// or if a forced tile (tile_m, tile_n, tile_k) does not fit or does not divide.
BmmSpyrePlan plan_bmm_spyre(const BmmShape &shape, const BmmSpyreOptions &options = {});

// Host reference: tiles of C, vectorized by the target's natural vector size,
// parallel over row tiles and batch.
void schedule_bmm_host(BmmFuncs f, const BmmShape &shape, const Halide::Target &target);

// Spyre: A_in / B_in are the input wrappers (A.in(), B.in()) staged in the
// scratchpad. The shape's padded extents must be those of `plan`.
void schedule_bmm_spyre(BmmFuncs f, Halide::Func A_in, Halide::Func B_in, const BmmShape &shape,
                        const BmmSpyrePlan &plan);

}  // namespace spyre
