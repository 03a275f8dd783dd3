// Schedules of scaled dot-product attention (generators/attention_generator.cpp).
//
// Spyre: (head, query tile) pairs are split across the cores; per core, per
// query tile (Q tile staged once by DMA), one pass streams the keys and values
// through the scratchpad one KV tile at a time:
//   Kt tile (DMA, shared over the ring by the cores of a head) ->
//   S = Q.K^T tile (pt.matmul) -> s = S * scale + mask (SFU) ->
//   tm = rowmax s (SFU: with KV tiles of several f32 sticks in two steps, the max of
//   the row's sticks lane by lane, then one stick's rowmax: a row reduction costs
//   17x an elementwise op per stick, docs/timing-model.md) -> P = exp(s - tm) (SFU) ;
//   V tile (DMA, shared like Kt) -> [V | 1] (SFU copy into a ones-filled tile) ->
//   pv = P.[V | 1] (pt.matmul) ->
//   (O, m) = (O * exp(m - m') + pv * exp(tm - m'), m') with m' = max(m, tm) (SFU)
//   then O / l (SFU) and one DMA of the output tile.
// No s x s scores exist anywhere: one query tile x KV tile block lives in the scratchpad.
// Grouped-query attention (kv_heads < heads): a core's heads lie in one group or are whole
// groups (looped KV head x query head of the group), the cores of a group share the K and V
// loads over the ring, and when they fit a KV head's whole Kt and V are staged once per core
// and KV head instead of per KV tile (resident_kv).
// In prefill each step's S and softmax (and, streamed, its [V | 1]) are computed a step
// ahead (softmax_ahead, values_ahead: spyre::compute_one_iteration_ahead), so the PT's S of
// step t+1 and P.V of step t overlap the SFU's softmax of t+1 and update of t.
// Host: the same Funcs per query tile, parallel over (query tile, head).
#pragma once

#include "Halide.h"
#include "schedule_knobs.h"

namespace spyre {

struct AttentionFuncs {
    Halide::Func out;        // out(d, i, h) = result(d, i, h)
    Halide::Func result;     // cast(dtype, O(d, i, h) / O(ones column, i, h))
    Halide::Func state;      // Tuple (O, m)(n, i, h): [O | l] and the running max, updated per KV tile (rt)
    Halide::Func pv;         // pv(n, i, t, h) += VX(n, key, h) * P(k, t, i, h): [O | l] of KV tile t alone, f32
    Halide::Func vx;         // VX(n, key, h): V in its first Dp columns, ones after
    Halide::Func probs;      // P(j, t, i, h) = cast(dtype, exp(s - tile_max))
    Halide::Func tile_max;   // tm(i, t, h) = max_k s(k, t, i, h)
    Halide::Func scores, s;  // S(j, t, i, h) (f32 accumulator, Q.K^T of KV tile t), s = S * scale + mask
    Halide::Func mask;       // the mask table (undefined Func when no mask is needed)
    Halide::Func kt_in, v_in, q_in;  // input wrappers: Kt, V (staged, then copied into VX), Q
    Halide::RDom rd;         // over the (padded) head dim
    Halide::RDom rk;         // over the keys of one KV tile (tile_max, pv)
    Halide::RDom rt;         // over the KV tiles (state)
    Halide::RDom rv;         // VX update: the first Dp columns
    Halide::RDom rmask;      // the mask table's -inf fill (undefined when none)
    Halide::Var d, i, h, j, t, n, z;  // j: key within a KV tile, t: KV tile
    Halide::Func key_mask_in;  // the key_mask input's wrapper (undefined without key_mask): staged once per core
    // With a KV tile of several f32 sticks, tile_max in two steps: lane_max(l, t, i, h) = the max of
    // s(st * lanes + l, t, i, h) over the row's sticks st (rs), then tile_max = its max over the lanes
    // l (rl). Undefined (tile_max reduces s's row directly, over rk) otherwise.
    Halide::Func lane_max = Halide::Func("lane_max");
    Halide::RDom rs, rl;
    Halide::Var l = Halide::Var("l");
};

struct AttentionSpyrePlan {
    int d = 0, s = 0, heads = 0;
    int q = 0;            // query rows (s unless gen_attention's q says otherwise)
    int tile = 0;         // queries per query tile (a schedule choice)
    int kv_tile = 0;      // keys per KV tile (part of the algorithm: the online softmax's steps)
    int dp = 0, sp = 0;   // padded head dim (whole sticks) and sequence (whole KV tiles)
    int qp = 0;           // padded query rows: sp when q == s, else whole sticks up to 128 rows, whole 128-row tiles above
    int nx = 0;           // columns of [V | 1]: dp + one input stick
    int nx_acc = 0;       // columns of pv and of the state: dp + one f32 stick (the ones column is dp)
    int lanes = 0;        // stick lanes of the input type
    int ch = 1, cq = 1;   // cores along heads and query tiles
    int group = 1;        // query heads per KV head (grouped-query attention: heads / kv_heads)
    int64_t footprint_bytes = 0;
    double estimated_us = 0;     // the planning framework's estimate of the kernel (schedules/planner.h)
    bool double_buffer = false;    // the Kt tiles in two copies (the planner decides)
    // With double_buffer, the V tiles too (the planner decides: the next V tile's load overlaps
    // this step, where one copy's load would wait out more than the step's scores and softmax).
    bool double_buffer_v = false;
    // Grouped-query attention: a core keeps the whole Kt and V of its KV head in the
    // scratchpad for all the query heads and query tiles it computes with it (the planner
    // decides: when it fits), instead of streaming them per KV tile.
    bool resident_kv = false;
    bool double_buffer_q = false;       // with resident_kv: the Q tiles in two copies (when they fit)
    bool double_buffer_result = false;  // with resident_kv: the result tiles in two copies (when they fit)
    // The next step's scores and softmax (S on the PT; s, the row max and P on the SFU) computed
    // while this step's P.V and state update run, in two copies (compute_one_iteration_ahead;
    // the planner decides: with double_buffer, at least two steps a loop, where the steps are
    // not paced by their loads and the copies fit).
    bool softmax_ahead = false;
    // With softmax_ahead and K and V streamed, [V | 1] built a step ahead too, in two copies (the
    // planner decides: when they fit), so on the SFU it does not wait behind the next step's softmax.
    bool values_ahead = false;

    int cores() const { return ch * cq; }
};

// Knobs of the Spyre schedule (GeneratorParams of gen_attention).
// X(type, name, default, what it does, the autoscheduler's candidates; schedule_knobs.h)
#define SPYRE_ATTENTION_KNOBS(X)                                                                                   \
    X(int, max_cores, 0, "use at most this many cores, ch * cq (0: all the machine's cores)",      \
      spyre::knob_core_counts)                                                                                     \
    X(bool, double_buffer, true, "Kt tiles (and V tiles where that pays) in two copies when they fit and the KV loop is even: DMA overlaps the PT and SFU", \
      spyre::knob_bools)                                                                                           \
    X(int, tile, 0,                                                                                                \
      "queries per query tile (0: automatic; rounded up to whole sticks; must divide the padded queries qp)",      \
      spyre::knob_from_shape)

struct AttentionSpyreOptions {
    SPYRE_KNOB_MEMBERS(SPYRE_ATTENTION_KNOBS)
    // Keys per KV tile (0: automatic; rounded up to whole sticks). It is part of the
    // algorithm (gen_attention's kv_tile GeneratorParam, not a schedule knob): it sets the
    // steps of the online softmax and the padded sequence sp.
    int kv_tile = 0;
    // KV heads (0: heads). Part of the algorithm (gen_attention's kv_heads): query head h
    // attends with KV head h / (heads / kv_heads); heads must be a multiple of it.
    int kv_heads = 0;
};

// q: query rows (0: s, the self-attention shape); s: keys.
AttentionSpyrePlan plan_attention_spyre(int d, int s, int heads, int q, const Halide::Type &t,
                                        const AttentionSpyreOptions &options = {});

void schedule_attention_host(AttentionFuncs f, const Halide::Target &target);
void schedule_attention_spyre(AttentionFuncs f, const AttentionSpyrePlan &plan, bool has_mask);

}  // namespace spyre
