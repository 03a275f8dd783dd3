// Schedules of scaled dot-product attention (see attention_schedule.h).
#include "attention_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <stdexcept>

#include "spyre/machine.h"
#include "planner.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

namespace {

// Plans pad whatever the build (padded_extent is the identity in host builds).

// Scratchpad bytes per core for query tile Q and KV tile K: the Q tile, the Kt
// tile, the V tile and [V | 1], the f32 scores S and s, P, the f32 pv of a KV
// tile, the f32 state (O, m), the result tile, the tile max, the mask table (mask_len f32) and
// the SFU temporaries of a Q x K block and of the state update.
int64_t attention_footprint(int Q, int K, int dp, int nx, int mask_len, int bytes) {
    const int64_t qk = (int64_t)Q * K;
    const int64_t xq = (int64_t)nx * Q;
    return (int64_t)dp * Q * bytes + (int64_t)dp * K * bytes * 2 + (int64_t)nx * K * bytes + qk * 4 * 2 +
           qk * bytes + xq * 4 + 2 * xq * 4 + (int64_t)dp * Q * bytes + Q * 4 + (int64_t)mask_len * 4 +
           qk * 4 * 2 + xq * 4 * 2;
}

}  // namespace

AttentionSpyrePlan plan_attention_spyre(int d, int s, int heads, int q, const Type &t, const AttentionSpyreOptions &options) {
    const MachineDescription &m = scheduling_machine();
    AttentionSpyrePlan p;
    p.d = d;
    p.s = s;
    p.q = q == 0 ? s : q;
    p.heads = heads;
    p.lanes = stick_lanes(t);
    p.dp = round_up(d, p.lanes);
    p.nx = p.dp + p.lanes;
    p.nx_acc = p.dp + stick_lanes(Float(32));
    // KV tiles of 256 keys (128 when that pads less) and query tiles of 128 queries (64-row PT
    // passes are at full efficiency), fewer for short sequences (the smallest multiple of a stick that
    // covers s), and smaller when the scratchpad is short: for each KV tile from the
    // largest, the largest query tile that divides the padded sequence and fits. The KV
    // tile is chosen without the query-tile knob, so that knob never changes the algorithm.
    //
    // Queries: with q == s (the default) they are padded like the keys (qp = sp). Otherwise
    // (decode shapes) to whole sticks up to 128 queries and to whole 128-query tiles above;
    // either way qp is fixed before the query-tile knob, which must divide it. The query tile
    // is whole sticks (tile_max is stored with i as its stick dimension), so q = 1..lanes is
    // one stick of query rows, the padded rows computed and dropped.
    const int64_t budget = planning::scratchpad_budget(m);
    const int auto_tile = std::min(128, round_up(p.q, p.lanes));
    const bool decode = p.q != s;
    auto pad_queries = [&] { p.qp = decode ? round_up(p.q, auto_tile) : p.sp; };
    // The causal mask table has sp + qp entries (attention_generator.cpp).
    auto footprint = [&] { return attention_footprint(p.tile, p.kv_tile, p.dp, p.nx, p.sp + p.qp, t.bytes()); };
    auto largest_query_tile = [&] {  // the largest multiple of a stick up to auto_tile dividing qp that fits
        pad_queries();
        for (p.tile = std::min(auto_tile, p.qp); p.tile > p.lanes; p.tile -= p.lanes) {
            if (p.qp % p.tile == 0 && footprint() <= budget) break;
        }
    };
    if (options.kv_tile > 0) {
        p.kv_tile = round_up(options.kv_tile, p.lanes);
        p.sp = round_up(s, p.kv_tile);
        largest_query_tile();
    } else {
        // 256 keys when that pads the sequence no more than 128 would: half the state updates.
        const int wide = std::min(256, round_up(s, p.lanes));
        const int kv_auto = std::min(128, round_up(s, p.lanes));
        const int start = round_up(s, wide) <= round_up(s, kv_auto) ? wide : kv_auto;
        for (p.kv_tile = start;; p.kv_tile -= p.lanes) {
            p.sp = round_up(s, p.kv_tile);
            largest_query_tile();
            if (footprint() <= budget || p.kv_tile == p.lanes) break;
        }
    }
    if (options.tile == 0) {
        // Short sequences with few heads: smaller query tiles until every core has a tile.
        while (p.tile > p.lanes && (int64_t)heads * (p.qp / p.tile) < usable_cores(options.max_cores)) {
            do {
                p.tile -= p.lanes;
            } while (p.qp % p.tile != 0);
        }
    } else {
        p.tile = round_up(options.tile, p.lanes);
        _halide_user_assert(p.qp % p.tile == 0)
            << "attention Spyre schedule: tile=" << options.tile << " (" << p.tile << " queries in whole sticks) does not "
            << "divide the padded queries " << p.qp << " (" << (decode ? "q padded to whole query tiles" : "KV tiles of " + std::to_string(p.kv_tile) + " keys") << ")";
    }
    p.footprint_bytes = footprint();
    _halide_user_assert(options.tile == 0 || p.footprint_bytes <= budget)
        << "attention Spyre schedule: tile=" << options.tile << " (" << p.tile << " queries) with KV tiles of " << p.kv_tile
        << " keys, head dim " << d << " and sequence " << s << " does not fit the scratchpad (" << p.footprint_bytes
        << " bytes)";
    if (p.footprint_bytes > budget) {
        throw std::runtime_error("attention: head dim " + std::to_string(d) + " with sequence " + std::to_string(s) +
                                 " and KV tiles of " + std::to_string(p.kv_tile) + " keys does not fit the scratchpad (" +
                                 std::to_string(p.footprint_bytes) + " bytes)");
    }
    const int kv_heads = options.kv_heads == 0 ? heads : options.kv_heads;
    _halide_user_assert(kv_heads >= 1 && heads % kv_heads == 0)
        << "attention: heads=" << heads << " is not a multiple of kv_heads=" << kv_heads;
    p.group = heads / kv_heads;
    // Grouped-query attention: the whole Kt and V of a KV head resident in the scratchpad
    // (read once per core and KV head, for all its query heads and query tiles) in place of
    // their KV tiles, when they fit.
    const int64_t resident_extra = (int64_t)2 * p.dp * (p.sp - p.kv_tile) * t.bytes();
    if (p.group > 1 && p.footprint_bytes + resident_extra <= budget) {
        p.resident_kv = true;
        p.footprint_bytes += resident_extra;
        // No KV tile is loaded in the loop then: the Q tile, then the result tile, get the
        // second copies when they fit.
        const int64_t io_copy = (int64_t)p.dp * p.tile * t.bytes();
        for (bool *copy : {&p.double_buffer_q, &p.double_buffer_result}) {
            if (options.double_buffer && p.footprint_bytes + io_copy <= budget) {
                *copy = true;
                p.footprint_bytes += io_copy;
            }
        }
    }
    // Double buffering (the framework's rule, planner.h): a second copy of the Kt
    // tile, staged in the KV tile loop of sp / kv_tile iterations.
    if (!p.resident_kv) {
        planning::TiledPlan kv;
        kv.buffered_bytes = (int64_t)p.dp * p.kv_tile * t.bytes();
        kv.fixed_bytes = p.footprint_bytes - kv.buffered_bytes;
        kv.staging_trip = p.sp / p.kv_tile;
        const planning::Verdict v = planning::judge(kv, options.double_buffer, m);
        p.double_buffer = v.double_buffer;
        p.footprint_bytes = v.footprint_bytes;
    }
    // The core split over (heads, query tiles): the framework's even split. Grouped-query
    // attention reads K and V at h / group: each core's run of heads must lie in one group
    // (the index is constant on the core) or be whole groups (the schedule splits it into
    // KV head x query head of the group), so every index stays affine in the loops.
    const std::vector<int> c = planning::even_core_split(
        {heads, p.qp / p.tile}, usable_cores(options.max_cores), [&](const std::vector<int> &split) {
            const int per_core = heads / split[0];
            return p.group % per_core == 0 || per_core % p.group == 0;
        });
    p.ch = c[0];  // one head per core is always accepted: c is never empty
    p.cq = c[1];
    return p;
}

void schedule_attention_host(AttentionFuncs f, const Target &target) {
    const int vec = target.natural_vector_size<float>();
    Var qo("qo"), qi("qi"), tile("tile");
    f.out.split(f.i, qo, qi, 16, TailStrategy::GuardWithIf).fuse(qo, f.h, tile).parallel(tile);
    f.state.compute_at(f.out, tile);
    // [O | l] is d + 1 wide: the state update stays scalar (predicated f16 vectors of a
    // ragged tail crashed the host JIT with SIGILL for d = 17).
    f.state.update().reorder(f.n, f.i, f.rt);
    for (Func g : {f.pv, f.tile_max, f.scores, f.probs, f.vx}) g.compute_at(f.state, f.rt);
    if (f.mask.defined()) f.mask.compute_root();
    f.scores.update().reorder(f.j, f.i, f.rd).vectorize(f.j, vec, TailStrategy::GuardWithIf);
    f.tile_max.update().reorder(f.rk, f.i);
    f.pv.update().reorder(f.n, f.i, f.rk);
}

void schedule_attention_spyre(AttentionFuncs f, const AttentionSpyrePlan &p, bool has_mask) {
    const int T = p.tile;
    // (heads, query tiles) across the cores; per core: head, query tile, rows, d.
    const CoreSplit cores = split_across_cores(f.out, {{f.h, p.heads, 1, p.ch}, {f.i, p.qp, T, p.cq}});
    Var qo("qo"), qi("qi");
    f.out.split(cores.serial_of(f.i), qo, qi, T, TailStrategy::RoundUp)
        .reorder(f.d, qi, qo, cores.serial_of(f.h));
    // Grouped-query attention: a core's heads that span several groups loop as KV head x query
    // head of the group (h = kvh * group + r), so K and V's head index h / group is affine.
    const int heads_per_core = p.heads / p.ch;
    // The loop of f.out over which one KV head's Kt and V stay resident (resident_kv): the core's
    // when its heads share one KV head, else the KV head loop.
    VarOrRVar kv_loop = cores.core;
    if (p.group > 1 && heads_per_core > p.group) {
        Var kvh("kvh"), hr("hr");
        f.out.split(cores.serial_of(f.h), kvh, hr, p.group, TailStrategy::RoundUp);
        kv_loop = kvh;
    }
    stick_vectorize(f.out, f.d);
    stage_in_scratchpad(f.result, f.out, qo);
    // With K and V resident the Q load of the next query tile and the O store of the previous
    // one overlap this tile's work (double_buffer_q, double_buffer_result).
    if (p.double_buffer_result) double_buffer_result(f.result);
    stage_in_scratchpad(f.q_in, f.out, qo, p.double_buffer_q);

    // Mask table: once per core.
    if (has_mask) {
        f.mask.bound(f.z, 0, p.sp + p.qp);
        accumulate_in_scratchpad(f.mask, f.out, cores.core);
        // The -1e30 fill: whole f32 sticks when it starts on one (causal), else element by element.
        const int64_t *fill_min = Internal::as_const_int(f.rmask.x.min());
        const int64_t *fill_extent = Internal::as_const_int(f.rmask.x.extent());
        if (fill_min && fill_extent && *fill_min % stick_lanes(Float(32)) == 0 &&
            *fill_extent % stick_lanes(Float(32)) == 0) {
            stick_vectorize(f.mask, 0, f.rmask.x);
        } else {
            f.mask.update().unscheduled();
        }
    }

    // The key mask: once per core (sp values).
    if (f.key_mask_in.defined()) stage_in_scratchpad(f.key_mask_in, f.out, cores.core);

    // The running state (O, m) of the query tile, updated once per KV tile (rt).
    f.state.bound(f.n, 0, p.nx_acc);
    accumulate_in_scratchpad(f.state, f.out, qo);
    f.state.update().reorder(f.n, f.i, f.rt.x, f.h);
    stick_vectorize(f.state, 0, f.n);

    // Per KV tile: Kt (DMA), S (PT), s (SFU), tile max, P (SFU), [V | 1] (DMA), pv (PT).
    accumulate_in_scratchpad(f.scores, f.state, f.rt.x);
    matmul_on_pt(f.scores, f.rd, f.j, f.i);
    if (p.resident_kv) {
        stage_in_scratchpad(f.kt_in, f.out, kv_loop);
    } else {
        stage_in_scratchpad(f.kt_in, f.state, f.rt.x, p.double_buffer);  // the next Kt tile's DMA overlaps this tile's work
    }
    stage_in_scratchpad(f.s, f.state, f.rt.x);
    accumulate_in_scratchpad(f.tile_max, f.state, f.rt.x);
    f.tile_max.update().reorder(f.rk, f.i);
    stage_in_scratchpad(f.probs, f.state, f.rt.x);
    f.pv.bound(f.n, 0, p.nx_acc);
    accumulate_in_scratchpad(f.pv, f.state, f.rt.x);
    matmul_on_pt(f.pv, f.rk.x, f.n, f.i);
    f.vx.bound(f.n, 0, p.nx);
    accumulate_in_scratchpad(f.vx, f.state, f.rt.x);
    stick_vectorize(f.vx, 0, f.rv.x);
    if (p.resident_kv) {
        stage_in_scratchpad(f.v_in, f.out, kv_loop);
    } else {
        stage_in_scratchpad(f.v_in, f.state, f.rt.x);
    }
    // The cores of one head load the same Kt and V tiles, and with grouped-query attention so do
    // the cores of one group's query heads: one DMA per chain, passed along the ring.
    if (p.cq > 1 || heads_per_core < p.group) {
        share_over_ring(f.kt_in);
        share_over_ring(f.v_in);
    }
}

}  // namespace spyre
