// Schedules of scaled dot-product attention (see attention_schedule.h).
#include "attention_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

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
// tile, the f32 state (O, m), the result tile, the tile max and its lane max (an f32 stick a row), the mask table (mask_len f32) and
// the SFU temporaries of a Q x K block and of the state update.
int64_t attention_footprint(int Q, int K, int dp, int nx, int mask_len, int bytes) {
    const int64_t qk = (int64_t)Q * K;
    const int64_t xq = (int64_t)nx * Q;
    return (int64_t)dp * Q * bytes + (int64_t)dp * K * bytes * 2 + (int64_t)nx * K * bytes + qk * 4 * 2 +
           qk * bytes + xq * 4 + 2 * xq * 4 + (int64_t)dp * Q * bytes + Q * 4 + (int64_t)Q * stick_lanes(Float(32)) * 4 +
           (int64_t)mask_len * 4 +
           qk * 4 * 2 + xq * 4 * 2;
}

// The buffers of one query tile: with grouped-query attention the whole Kt and V of a KV
// head resident in the scratchpad (read once per core and KV head, for all its query heads
// and query tiles), and [V | 1] built once from V for them all, in place of their KV
// tiles, when they fit, and then the Q tile and the
// result tile in two copies when they fit; else the Kt tile in two copies by the framework's
// rule (judge: staged in the KV tile loop of sp / kv_tile iterations).
void plan_buffers(AttentionSpyrePlan *c, const Type &t, const AttentionSpyreOptions &options, int64_t budget,
                  const MachineDescription &m) {
    // Kt, V and [V | 1] for all sp keys instead of one KV tile's.
    const int64_t resident_extra = (int64_t)(2 * c->dp + c->nx) * (c->sp - c->kv_tile) * t.bytes();
    if (c->group > 1 && c->footprint_bytes + resident_extra <= budget) {
        c->resident_kv = true;
        c->footprint_bytes += resident_extra;
        // No KV tile is loaded in the loop then: the Q tile, then the result tile, get the
        // second copies when they fit.
        const int64_t io_copy = (int64_t)c->dp * c->tile * t.bytes();
        for (bool *copy : {&c->double_buffer_q, &c->double_buffer_result}) {
            if (options.double_buffer && c->footprint_bytes + io_copy <= budget) {
                *copy = true;
                c->footprint_bytes += io_copy;
            }
        }
        return;
    }
    planning::TiledPlan kv;
    kv.buffered_bytes = (int64_t)c->dp * c->kv_tile * t.bytes();
    kv.fixed_bytes = c->footprint_bytes - kv.buffered_bytes;
    kv.staging_trip = c->sp / c->kv_tile;
    const planning::Verdict v = planning::judge(kv, options.double_buffer, m);
    c->double_buffer = v.double_buffer;
    c->footprint_bytes = v.footprint_bytes;
}

// The cores that load one KV head's tiles at the same steps pass them along the ring
// (schedule_attention_spyre: cores along the query tiles, or several per group): the cores
// of one such chain.
double chain_of(const AttentionSpyrePlan &c) {
    const int heads_per_core = c.heads / c.ch;
    if (heads_per_core < c.group) return (double)c.cq * c.group / heads_per_core;
    return c.cq;
}

// One streamed V tile (the second copy double_buffer_v adds).
int64_t v_tile_bytes(const AttentionSpyrePlan &c, const Type &t) { return (int64_t)c.dp * c.kv_tile * t.bytes(); }

// The PT and SFU cycles of one KV step of a query tile, and with the V tiles in one copy the
// cycles a step takes at least. A step's V tile in one copy is loaded while the step's row max,
// exp and cast run (simulated, its load starts at the row max), and P.V waits out the rest of
// its load; the next Kt tile's load follows it in the DMA queue. So such a step takes at least
// the two loads (each chain's first core loading its tiles, all chains at once), what of the
// softmax the V load does not cover, P.V and the state update.
struct AttentionStep {
    double pt = 0, sfu = 0;      // S and P.V; scaling, masking, row max, exp, cast, state update
    double row_max = 0;          // of those SFU cycles, the row max
    double update = 0;           // of those SFU cycles, the state update
    double paced_by_loads = 0;   // the V tiles in one copy: the step's cycles at least
};

AttentionStep attention_step(const AttentionSpyrePlan &c, const Type &t, const MachineDescription &m) {
    using SfuCost = MachineDescription::SfuCost;
    const double eb = t.bytes(), T = c.tile, K = c.kv_tile;
    auto sfu = [&](double n, double rows, double bytes, SfuCost cost) { return m.sfu_instruction_cycles(n, rows, bytes, cost); };
    const double f = planning::pt_type_factor(t, m);
    AttentionStep st;
    const double scores = m.pt_matmul_cycles(T, K, c.dp, f), pv = m.pt_matmul_cycles(T, c.nx, K, f);
    st.pt = scores + pv;
    // The row max: in two steps with KV tiles of several f32 sticks (the generator's lane_max).
    const double fl = stick_lanes(Float(32));
    const bool lane_steps = (int)K % (int)fl == 0 && K > fl;
    st.row_max = lane_steps ? (K / fl + 1) * sfu(fl, T, 4, SfuCost::Simple) + sfu(fl, T, 4, SfuCost::RowReduce)
                            : sfu(K, T, 4, SfuCost::RowReduce);
    const double exp_cast = sfu(K, T, 4, SfuCost::Transcendental) + sfu(K, T, eb, SfuCost::Simple);
    const double update = 3 * sfu(c.nx_acc, T, 4, SfuCost::Simple) + 2 * sfu(1, T, 4, SfuCost::Transcendental);
    st.sfu = 2 * sfu(K, T, 4, SfuCost::Simple) + st.row_max + exp_cast + update;
    st.update = update;
    const int loaders = std::max(1, (int)(c.ch * c.cq / chain_of(c)));
    const double tile_load = m.dram_cycles((double)loaders * K * c.dp * eb, 0, loaders);
    st.paced_by_loads = tile_load + std::max(tile_load, st.row_max + exp_cast) + pv + update;
    return st;
}

// Whether a streamed plan's V tiles get two copies: when the loads pace its steps (a step in
// one copy would take longer than its PT and SFU work, as in decode, where a step's work is a
// few query rows'); else the V load hides behind the softmax and a second copy only queues the
// first V tile ahead of the first step (the d=64 s=1024 heads=8 showcase: 102.1 us in one
// copy, 103.4 in two).
bool v_tiles_paced_by_loads(const AttentionSpyrePlan &c, const Type &t, const MachineDescription &m) {
    const AttentionStep st = attention_step(c, t, m);
    return st.paced_by_loads > st.pt + st.sfu;
}

// The second copies compute_one_iteration_ahead gives the buffers of a step that its P.V and
// update read: P and the row max (softmax_ahead), and [V | 1] (values_ahead).
int64_t softmax_ahead_bytes(const AttentionSpyrePlan &c, const Type &t) {
    return (int64_t)c.tile * c.kv_tile * t.bytes() + (int64_t)c.tile * 4;
}
int64_t values_ahead_bytes(const AttentionSpyrePlan &c, const Type &t) { return (int64_t)c.nx * c.kv_tile * t.bytes(); }

// Whether a candidate computes each step's softmax a step ahead (softmax_ahead). It does when:
//  - the copies fit and double_buffer is on;
//  - its pipelined loop has two steps or more: the query tiles of a head when K and V are
//    resident with one KV tile, else the KV tiles;
//  - the tile that loop loads for S has two copies (the Q tile, or streamed the Kt tile; K and V
//    resident over several KV tiles load none): else its load stays in the loop ahead of S and
//    the backend keeps program order;
//  - the steps are not paced by their loads (decode is: a step's work is a few query rows', and
//    the copies only delay the first step: d=128 s=512 q=4 heads=8 22.8 us in program order,
//    25.9 ahead).
// Measured on the Granite-8B prefill's attention (d=128 s=512 heads=32 kv_heads=8 causal):
// 124.0 -> 103.8 us.
bool softmax_ahead_pays(const AttentionSpyrePlan &c, const Type &t, const AttentionSpyreOptions &options, int64_t budget,
                        const MachineDescription &m) {
    if (!options.double_buffer || c.footprint_bytes + softmax_ahead_bytes(c, t) > budget) return false;
    const int steps = c.sp / c.kv_tile;
    const bool over_query_tiles = c.resident_kv && steps == 1;
    const int loop_trip = over_query_tiles ? c.qp / c.tile / c.cq : steps;
    if (loop_trip < 2) return false;
    if (over_query_tiles ? !c.double_buffer_q : !c.resident_kv && !c.double_buffer) return false;
    return c.resident_kv || !v_tiles_paced_by_loads(c, t, m);
}

// The cost of a candidate whose buffers are planned (plan_buffers), as the framework's
// estimate of its tile pipeline: the work unit is one KV step of one query tile.
// Per step: the Kt and [V | 1] tiles (DMA; once per core and KV head when resident, and
// once per chain of cores when shared over the ring), S = Q Kt and pv = P [V | 1] on the
// PT, and on the SFU the scaling and the mask of S, its row max, exp and P's cast, and the
// state update (attention_step); per query tile the Q load, the division by the sum, the cast and the store.
planning::Verdict attention_verdict(const AttentionSpyrePlan &c, const Type &t, const MachineDescription &m) {
    using SfuCost = MachineDescription::SfuCost;
    const double eb = t.bytes(), T = c.tile, K = c.kv_tile;
    const int heads_per_core = c.heads / c.ch, qtiles_per_core = c.qp / c.tile / c.cq;
    const double steps = (double)c.sp / c.kv_tile;
    const double qtiles_core = (double)heads_per_core * qtiles_per_core;
    auto sfu = [&](double n, double rows, double bytes, SfuCost cost) { return m.sfu_instruction_cycles(n, rows, bytes, cost); };
    const AttentionStep st = attention_step(c, t, m);
    const double tile_sfu = sfu(c.nx_acc, T, 4, SfuCost::Simple) + 2 * sfu(c.dp, T, 4, SfuCost::Simple);
    const bool single_v = !c.resident_kv && c.double_buffer && !c.double_buffer_v;
    // A step's units wait on each other (S, then the softmax, then P.V, then the update), unless
    // the softmax is computed a step ahead: then the PT's S and P.V overlap the SFU's work, but
    // with K and V streamed and [V | 1] built in program order, P.V waits for it behind the next
    // step's softmax (only the update overlaps).
    double work = st.pt + st.sfu;
    if (c.softmax_ahead && (c.resident_kv || c.values_ahead)) {
        work = std::max(st.pt, st.sfu);
    } else if (c.softmax_ahead) {
        work = std::max(st.pt + st.sfu - st.update, st.sfu);
    }
    const double step = single_v ? std::max(work, st.paced_by_loads) : work;
    // The cores that load one KV head's tiles at the same steps pass them along the ring
    // (schedule_attention_spyre: cores along the query tiles, or several per group).
    const bool shared = c.cq > 1 || heads_per_core < c.group;
    const double chain = chain_of(c);
    const double kv_tile_bytes = K * (c.dp + c.nx) * eb;
    const double kv_core_bytes = c.resident_kv ? std::max(1.0, (double)heads_per_core / c.group) * c.sp * (c.dp + c.nx) * eb
                                               : qtiles_core * steps * kv_tile_bytes;
    planning::TiledPlan tp;
    tp.reserve = planning::ScratchpadReserve::SfuRowWork;
    tp.fixed_bytes = c.footprint_bytes;
    tp.cores = c.ch * c.cq;
    tp.tiles_per_core = qtiles_core * steps;
    // Read once per chain of cores (chain is 1 where the cores do not share), resident or streamed.
    const double kv_read_bytes = (double)tp.cores * kv_core_bytes / chain;
    tp.read_bytes = kv_read_bytes + (double)c.heads * c.qp * c.dp * eb;
    tp.write_bytes = (double)c.heads * c.qp * c.dp * eb;
    if (shared && !c.resident_kv) tp.ring_bytes_per_core = kv_core_bytes * (chain - 1) / chain;
    tp.compute_cycles_per_tile = step + tile_sfu / steps;
    tp.waited_transfers_per_tile = (c.resident_kv ? 0.0 : 2.0) + 2.0 / steps;
    tp.staging_trip = c.resident_kv ? planning::staging_trip({qtiles_per_core, heads_per_core}) : (int)steps;
    if (c.resident_kv) tp.fixed_cycles = m.dram_cycles(kv_read_bytes, 0, tp.cores);
    planning::Verdict v;
    v.legal = true;
    v.cores = tp.cores;
    v.footprint_bytes = c.footprint_bytes;
    v.double_buffer = c.resident_kv ? c.double_buffer_q : c.double_buffer;
    v.cycles = planning::estimate_cycles(tp, v.double_buffer, m);
    return v;
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
    // KV tiles of 256 keys (512 with grouped query heads; 128 when that pads less) and query tiles of 128 queries (64-row PT
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
        // 256 keys when that pads the sequence no more than 128 would: half the state updates and
        // of the row maxes' per-row combines. With grouped query heads (their K and V resident
        // in the scratchpad when they fit) 512 too: the Granite prefill (s=512, 32 query over
        // 8 KV heads) 149.2 us with 256, 129.3 with 512. Streaming K and V a tile at a time,
        // 512 loses (d=128 s=1024 q=4 heads=64: 254.5 against 267.1 us; s=512 heads=32 causal:
        // 226.5 against 255.9, both in program order; d=64 s=1024 heads=8 with the softmax a step
        // ahead: 72.7 against 74.6, where in program order it gained, 102.1 against 87.9).
        const bool grouped = options.kv_heads > 0 && options.kv_heads < heads;
        const int kv_auto = std::min(128, round_up(s, p.lanes));
        int start = kv_auto;
        for (int wide : {grouped ? 512 : 256, 256}) {
            const int w = std::min(wide, round_up(s, p.lanes));
            if (round_up(s, w) <= round_up(s, kv_auto)) {
                start = w;
                break;
            }
        }
        for (p.kv_tile = start;; p.kv_tile -= p.lanes) {
            p.sp = round_up(s, p.kv_tile);
            largest_query_tile();
            if (footprint() <= budget || p.kv_tile == p.lanes) break;
        }
    }
    if (options.tile != 0) {
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

    // The candidates: the forced query tile, or every query tile of whole sticks up to the
    // largest that fits (p.tile) that divides the padded queries; each with every even core
    // split over (heads, query tiles) the grouped heads allow. The cost is the framework's
    // (attention_verdict); ties go to the larger tile, offered first.
    std::vector<int> tiles;
    if (options.tile != 0) {
        tiles.push_back(p.tile);
    } else {
        for (int T = p.tile; T >= p.lanes; T -= p.lanes) {
            if (p.qp % T == 0) tiles.push_back(T);
        }
    }
    // Grouped-query attention reads K and V at h / group: each core's run of heads must lie in
    // one group (the index is constant on the core) or be whole groups (the schedule splits it
    // into KV head x query head of the group), so every index stays affine in the loops.
    auto group_allows = [&](const std::vector<int> &split) {
        const int per_core = heads / split[0];
        return p.group % per_core == 0 || per_core % p.group == 0;
    };
    const int max_cores = usable_cores(options.max_cores);
    planning::PlanSearch<AttentionSpyrePlan> search("attention");
    for (int T : tiles) {
        AttentionSpyrePlan c = p;
        c.tile = T;
        c.footprint_bytes = attention_footprint(T, c.kv_tile, c.dp, c.nx, c.sp + c.qp, t.bytes());
        if (c.footprint_bytes > budget) continue;
        plan_buffers(&c, t, options, budget, m);
        std::vector<std::vector<int>> splits;
        for (const std::vector<int> &split : planning::even_core_splits({heads, c.qp / T}, max_cores)) {
            if (group_allows(split)) splits.push_back(split);
        }
        const std::vector<int> preferred = planning::even_core_split({heads, c.qp / T}, max_cores, group_allows);
        if (std::find(splits.begin(), splits.end(), preferred) == splits.end()) splits.insert(splits.begin(), preferred);
        for (const std::vector<int> &split : splits) {
            c.ch = split[0];
            c.cq = split[1];
            AttentionSpyrePlan cv = c;
            if (!c.resident_kv && c.double_buffer && c.footprint_bytes + v_tile_bytes(c, t) <= budget &&
                v_tiles_paced_by_loads(c, t, m)) {
                cv.double_buffer_v = true;
                cv.footprint_bytes += v_tile_bytes(c, t);
            }
            if (softmax_ahead_pays(cv, t, options, budget, m)) {
                cv.softmax_ahead = true;
                cv.footprint_bytes += softmax_ahead_bytes(cv, t);
                if (!cv.resident_kv && cv.footprint_bytes + values_ahead_bytes(cv, t) <= budget) {
                    cv.values_ahead = true;
                    cv.footprint_bytes += values_ahead_bytes(cv, t);
                }
            }
            const planning::Verdict v = attention_verdict(cv, t, m);
            search.offer(cv, v, [&] {
                return "query tiles of " + std::to_string(T) + ", cores " + std::to_string(cv.ch) + " x " +
                       std::to_string(cv.cq) + " (heads x query tiles)" + (cv.resident_kv ? ", K and V resident" : "") +
                       (cv.double_buffer_v ? ", V tiles in two copies" : "") +
                       (cv.softmax_ahead ? ", softmax a step ahead" : "") + (cv.values_ahead ? ", [V | 1] too" : "");
            });
        }
    }
    _halide_user_assert(search.found()) << "attention Spyre schedule: no query tile of head dim " << d << " and sequence "
                                        << s << " fits the scratchpad";
    return planning::with_estimate(search, m);
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
    if (f.lane_max.defined()) {
        f.lane_max.compute_at(f.state, f.rt);
        f.lane_max.update().reorder(f.l, f.i, f.rs);
        f.tile_max.update().reorder(f.rl, f.i);
    } else {
        f.tile_max.update().reorder(f.rk, f.i);
    }
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
    if (f.lane_max.defined()) {
        // Per stick of the row, the lanes' running max (one SFU max per stick over the tile's
        // rows), then one rowmax of a stick per row.
        f.lane_max.bound(f.l, 0, stick_lanes(Float(32)));  // one f32 stick a row
        accumulate_in_scratchpad(f.lane_max, f.state, f.rt.x);
        f.lane_max.update().reorder(f.l, f.i, f.rs.x);
        stick_vectorize(f.lane_max, 0, f.l);
        f.tile_max.update().reorder(f.rl, f.i);
    } else {
        f.tile_max.update().reorder(f.rk, f.i);
    }
    stage_in_scratchpad(f.probs, f.state, f.rt.x);
    f.pv.bound(f.n, 0, p.nx_acc);
    accumulate_in_scratchpad(f.pv, f.state, f.rt.x);
    matmul_on_pt(f.pv, f.rk.x, f.n, f.i);
    f.vx.bound(f.n, 0, p.nx);
    // With V resident, [V | 1] is built once per KV head for all its query tiles and heads
    // (the Granite prefill's attention: 129.3 -> 124.0 us), else per KV tile.
    if (p.resident_kv) {
        accumulate_in_scratchpad(f.vx, f.out, kv_loop);
    } else {
        accumulate_in_scratchpad(f.vx, f.state, f.rt.x);
    }
    stick_vectorize(f.vx, 0, f.rv.x);
    if (p.resident_kv) {
        stage_in_scratchpad(f.v_in, f.out, kv_loop);
    } else {
        stage_in_scratchpad(f.v_in, f.state, f.rt.x, p.double_buffer_v);
    }
    // The cores of one head load the same Kt and V tiles, and with grouped-query attention so do
    // the cores of one group's query heads: one DMA per chain, passed along the ring.
    if (p.cq > 1 || heads_per_core < p.group) {
        share_over_ring(f.kt_in);
        share_over_ring(f.v_in);
    }
    // P and the row max are read by P.V and the update: two copies; S, s and the lane maxes only
    // by the softmax itself: one. With values_ahead [V | 1] is built a step ahead too (two copies:
    // P.V reads it), so on the SFU it never waits behind the next step's softmax, and its V tile
    // loads with the step's producers (in one copy, read only by [V | 1], unless it has two).
    if (p.softmax_ahead) {
        for (Func g : {f.probs, f.tile_max}) compute_one_iteration_ahead(g);
        for (Func g : {f.scores, f.s, f.lane_max}) {
            if (g.defined()) compute_one_iteration_ahead(g, /*second_copy=*/false);
        }
        if (p.values_ahead) {
            compute_one_iteration_ahead(f.vx);
            if (!p.double_buffer_v) compute_one_iteration_ahead(f.v_in, /*second_copy=*/false);
        }
    }
}

}  // namespace spyre
