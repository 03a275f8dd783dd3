// Schedules of scaled dot-product attention (see attention_schedule.h).
#include "attention_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <stdexcept>

#include "spyre/machine.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

namespace {

// Plans pad whatever the build (padded_extent is the identity in host builds).

// Scratchpad bytes per core for tile T: Q tile, Kt tile, [V | 1] tile, the
// f32 score accumulator and scores, P, the f32 [O | l] accumulator, the result
// tile, the row max, the mask table and the SFU temporaries of a T x T tile.
int64_t attention_footprint(int T, int dp, int nx, int sp, int bytes, bool causal) {
    const int64_t tt = (int64_t)T * T;
    return (int64_t)dp * T * bytes * 2 + (int64_t)nx * T * bytes + tt * 4 * 2 + tt * bytes + (int64_t)nx * T * 4 +
           (int64_t)dp * T * bytes + T * 4 + (causal ? 2 : 1) * (int64_t)sp * 4 + tt * 4 * 2;
}

}  // namespace

AttentionSpyrePlan plan_attention_spyre(int d, int s, int heads, const Type &t, const AttentionSpyreOptions &options) {
    const MachineDescription &m = default_machine();
    AttentionSpyrePlan p;
    p.d = d;
    p.s = s;
    p.heads = heads;
    p.lanes = stick_lanes(t);
    p.dp = round_up(d, p.lanes);
    p.nx = p.dp + p.lanes;
    // Tiles of 128 queries/keys (64-row PT passes are at full efficiency), fewer
    // for short sequences (the smallest multiple of a stick that covers s), and
    // smaller when the scratchpad is short.
    const int64_t budget = m.scratchpad_bytes * 3 / 4;
    p.tile = std::min(128, round_up(s, p.lanes));
    while (p.tile > p.lanes &&
           attention_footprint(p.tile, p.dp, p.nx, round_up(s, p.tile), t.bytes(), true) > budget) {
        p.tile -= p.lanes;
    }
    if (options.tile > 0) p.tile = round_up(options.tile, p.lanes);
    p.sp = round_up(s, p.tile);
    p.footprint_bytes = attention_footprint(p.tile, p.dp, p.nx, p.sp, t.bytes(), true);
    _halide_user_assert(options.tile == 0 || p.footprint_bytes <= budget)
        << "attention Spyre schedule: tile=" << options.tile << " (" << p.tile << " queries / keys in whole sticks) with head dim "
        << d << " and sequence " << s << " does not fit the scratchpad (" << p.footprint_bytes << " bytes)";
    if (p.footprint_bytes > budget) {
        throw std::runtime_error("attention: head dim " + std::to_string(d) + " with sequence " + std::to_string(s) +
                                 " does not fit the scratchpad (" + std::to_string(p.footprint_bytes) + " bytes)");
    }
    // Double buffering: second copies of the two Kt tiles, when they fit and the KV
    // tile loops (sp / T iterations) are even.
    const int64_t kt_copies = 2 * (int64_t)p.dp * p.tile * t.bytes();
    if (options.double_buffer && (p.sp / p.tile) % 2 == 0 && p.footprint_bytes + kt_copies <= budget) {
        p.double_buffer = true;
        p.footprint_bytes += kt_copies;
    }
    const std::vector<int> c = plan_core_split("attention", {{Var("h"), heads, 1}, {Var("i"), p.sp, p.tile}},
                                               CoreSplitOptions{usable_cores(options.max_cores), 1});
    p.ch = c[0];
    p.cq = c[1];
    return p;
}

void schedule_attention_host(AttentionFuncs f, const Target &target) {
    const int vec = target.natural_vector_size<float>();
    Var qo("qo"), qi("qi"), tile("tile");
    f.out.split(f.i, qo, qi, 16, TailStrategy::GuardWithIf).fuse(qo, f.h, tile).parallel(tile);
    for (Func g : {f.row_max, f.acc, f.scores1, f.scores2, f.probs, f.vx}) g.compute_at(f.out, tile);
    if (f.mask.defined()) f.mask.compute_root();
    f.scores1.update().reorder(f.j, f.i, f.rd).vectorize(f.j, vec, TailStrategy::GuardWithIf);
    f.scores2.update().reorder(f.j, f.i, f.rd).vectorize(f.j, vec, TailStrategy::GuardWithIf);
    // [O | l] is d + 1 wide: its update stays scalar (predicated f16 vectors of a
    // ragged tail crashed the host JIT with SIGILL for d = 17).
    f.acc.update().reorder(f.n, f.i, f.rj_acc);
}

void schedule_attention_spyre(AttentionFuncs f, const AttentionSpyrePlan &p, bool has_mask) {
    const int T = p.tile;
    // (heads, query tiles) across the cores; per core: head, query tile, rows, d.
    const CoreSplit cores = split_across_cores(f.out, {{f.h, p.heads, 1, p.ch}, {f.i, p.sp, T, p.cq}});
    Var qo("qo"), qi("qi");
    f.out.split(cores.serial_of(f.i), qo, qi, T, TailStrategy::RoundUp)
        .reorder(f.d, qi, qo, cores.serial_of(f.h));
    stick_vectorize(f.out, f.d);
    stage_in_scratchpad(f.result, f.out, qo);
    stage_in_scratchpad(f.q_in, f.out, qo);

    // Mask table: once per core.
    if (has_mask) {
        f.mask.bound(f.z, 0, 2 * p.sp);
        accumulate_in_scratchpad(f.mask, f.out, cores.core);
        // The -1e30 fill: whole f32 sticks when it starts on one (causal), else element by element.
        const int64_t *fill_min = Internal::as_const_int(f.rmask.x.min());
        const int64_t *fill_extent = Internal::as_const_int(f.rmask.x.extent());
        if (fill_min && fill_extent && *fill_min % 32 == 0 && *fill_extent % 32 == 0) {
            stick_vectorize(f.mask, 0, f.rmask.x);
        } else {
            f.mask.update().unscheduled();
        }
    }

    // Pass 1: row max over KV tiles; per tile Kt (DMA), S (PT), s (SFU), rowmax.
    accumulate_in_scratchpad(f.row_max, f.out, qo);
    RVar jo1("jo1"), ji1("ji1");
    f.row_max.update().split(f.rj_max, jo1, ji1, T).reorder(ji1, f.i, jo1);
    accumulate_in_scratchpad(f.scores1, f.row_max, jo1);
    matmul_on_pt(f.scores1, f.rd, f.j, f.i);
    stage_in_scratchpad(f.kt_in1, f.row_max, jo1, p.double_buffer);  // the next Kt tile's DMA overlaps this tile's work
    stage_in_scratchpad(f.s1, f.row_max, jo1);

    // Pass 2: [O | l] accumulated over KV tiles on the PT.
    f.acc.bound(f.n, 0, p.nx);
    accumulate_in_scratchpad(f.acc, f.out, qo);
    const PtMatmul pv = matmul_on_pt(f.acc, f.rj_acc.x, f.n, f.i, T);
    // Per KV tile; a single KV tile (sp == T) is not chunked: then per query tile.
    Func at_func = pv.k_chunked ? f.acc : f.out;
    VarOrRVar at = pv.k_chunked ? VarOrRVar(pv.k_outer) : VarOrRVar(qo);
    f.vx.bound(f.n, 0, p.nx);
    accumulate_in_scratchpad(f.vx, at_func, at);
    stick_vectorize(f.vx, 0, f.rv.x);
    stage_in_scratchpad(f.probs, at_func, at);
    stage_in_scratchpad(f.s2, at_func, at);
    accumulate_in_scratchpad(f.scores2, at_func, at);
    matmul_on_pt(f.scores2, f.rd, f.j, f.i);
    stage_in_scratchpad(f.kt_in2, at_func, at, p.double_buffer && pv.k_chunked);
}

}  // namespace spyre
