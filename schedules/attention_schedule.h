// Schedules of scaled dot-product attention (generators/attention_generator.cpp).
//
// Spyre: (head, query tile) pairs are split across the cores; per core, per
// query tile of T queries (Q tile staged once by DMA), two passes stream the
// keys and values through the scratchpad one KV tile of T keys at a time:
//   pass 1 (row max):  Kt tile (DMA) -> S = Q.K^T tile (pt.matmul) ->
//                      s = S * scale + mask (SFU) -> m = max(m, rowmax s) (sfu.rowmax)
//   pass 2 (output):   Kt tile (DMA) -> S (pt.matmul) -> s (SFU) ->
//                      P = exp(s - m) (SFU) ; [V | 1] tile (DMA into a ones-filled tile) ->
//                      [O | l] += P.[V | 1] (pt.matmul: l, the row sum, is the ones column)
//   then O / l (SFU) and one DMA of the output tile.
// No s x s scores exist anywhere: one T x T tile lives in the scratchpad.
// Host: the same Funcs per query tile, parallel over (query tile, head).
#pragma once

#include "Halide.h"

namespace spyre {

struct AttentionFuncs {
    Halide::Func out;          // out(d, i, h) = result(d, i, h)
    Halide::Func result;       // cast(dtype, acc(d, i, h) / acc(ones column, i, h))
    Halide::Func acc;          // [O | l](n, i, h) += VX(n, j, h) * P(j, i, h), f32
    Halide::Func vx;           // VX(n, j, h): V in its first Dp columns, ones after
    Halide::Func probs;        // P(j, i, h) = cast(dtype, exp(s2 - row_max))
    Halide::Func scores2, s2;  // pass-2 scores: S2 (f32 accumulator, Q.K^T), s2 = S2 * scale + mask
    Halide::Func row_max;      // m(i, h) = max_j s1(j, i, h)
    Halide::Func scores1, s1;  // pass-1 scores, as in pass 2
    Halide::Func mask;         // the mask table (undefined Func when no mask is needed)
    Halide::Func kt_in1, kt_in2, q_in;  // input wrappers: Kt for each pass, Q
    Halide::RDom rd;           // over the (padded) head dim
    Halide::RDom rj_max, rj_acc;  // over the (padded) keys, pass 1 and pass 2
    Halide::RDom rv;           // VX update: the first Dp columns
    Halide::RDom rmask;        // the mask table's -inf fill (undefined when none)
    Halide::Var d, i, h, j, n, z;
};

struct AttentionSpyrePlan {
    int d = 0, s = 0, heads = 0;
    int tile = 0;         // T: queries per query tile and keys per KV tile
    int dp = 0, sp = 0;   // padded head dim (whole sticks) and sequence (whole tiles)
    int nx = 0;           // columns of [V | 1]: dp + one input stick
    int lanes = 0;        // stick lanes of the input type
    int ch = 1, cq = 1;   // cores along heads and query tiles
    int64_t footprint_bytes = 0;
    bool double_buffer = true;   // the Kt tiles of both passes in two copies

    int cores() const { return ch * cq; }
};

// Knobs of the Spyre schedule (GeneratorParams of gen_attention).
struct AttentionSpyreOptions {
    // Kt tiles in two copies when they fit and the KV loop is even: DMA overlaps the PT.
    bool double_buffer = true;
    int max_cores = 32;  // use at most this many cores (ch * cq)
    // Queries per query tile and keys per KV tile (0: automatic; rounded up to whole
    // sticks). It sets the padded sequence sp, which the algorithm is built with.
    int tile = 0;
};

AttentionSpyrePlan plan_attention_spyre(int d, int s, int heads, const Halide::Type &t,
                                        const AttentionSpyreOptions &options = {});

void schedule_attention_host(AttentionFuncs f, const Halide::Target &target);
void schedule_attention_spyre(AttentionFuncs f, const AttentionSpyrePlan &plan, bool has_mask);

}  // namespace spyre
