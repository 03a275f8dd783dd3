// Scaled dot-product attention, per head h:
//   O = softmax(Q K^T * scale [+ causal mask]) V
// Dimensions are innermost first; every tensor is sticked along dimension 0:
//   Q(d, i, h)    queries: head dim d innermost          (d x q x heads)
//   Kt(j, d, h)   keys, pre-transposed: sequence j innermost (s x d x heads)
//   V(d, j, h)    values: head dim d innermost           (d x s x heads)
//   O(d, i, h)    output, like Q
// q query rows attend over s keys; q = 0 (the default) means q = s, self-attention.
// These layouts make both matmuls PT-legal: S = Q.K^T is
// acc[j-vector] += Kt[d, j-vector] * Q[i, d], and P.V is
// acc[d-vector] += V[j, d-vector] * P[i, j]. (A K stored like Q can be brought
// to Kt with the transpose generator.)
//
// GeneratorParams: d, s, q, heads, kv_heads (below), dtype (float16/float32; computes in float32),
// causal (key j attends only to queries i >= j), scale (0: 1/sqrt(d)), key_mask (below),
// kv_tile (keys per KV tile, the online softmax's step; 0: planned, 128 or the
// stick-rounded sequence when shorter). The Spyre schedule's knobs are
// max_cores, double_buffer and tile (queries per query tile).
//
// kv_heads (grouped-query attention; 0, the default, is heads): Q and O keep
// `heads` heads, Kt and V have kv_heads heads, and query head h attends with
// KV head h / g, g = heads / kv_heads (the Llama/Granite convention: query heads
// kvh * g .. kvh * g + g - 1 share KV head kvh), so K and V are never repeated
// per query head. heads must be a multiple of kv_heads (configure() refuses
// others). The algorithm reads Kt(key, d, h / g) and V(d, j, h / g); on Spyre that
// index must be affine in the hardware loops, so the planner gives each core a
// run of heads inside one group (the index is constant on the core) or whole
// groups, which the schedule loops as KV head x query head of the group
// (h = kvh * g + r). The cores of one group load the same K and V: they are
// read from DRAM once per chain of cores and passed along the ring, and when a
// KV head's whole Kt and V fit the scratchpad beside the tiles they stay
// resident for all the query heads and query tiles a core computes with them
// (read once per KV head; the Q tiles are then double-buffered instead of the
// Kt tiles: Granite-8B's causal prefill, d=128 s=512 heads=32 kv_heads=8, reads
// 6.3 MB in 193.9 us instead of 37.7 MB in 362.7 us with K and V repeated).
// With kv_heads = heads (or 0) the programs are those of plain multi-head attention.
//
// q != s (decode). Query row i stands at position s - q + i: the q queries are
// the last q positions of the sequence, so with causal, query row i attends
// keys j <= s - q + i (q = s: j <= i, as before; q = 1: all s keys). causal
// needs q <= s; without causal every query row attends all s keys, whatever q.
// Grouped-query attention decode at batch B (e.g. Granite-8B: 32 query heads
// sharing 8 KV heads, g = 4 query heads per KV head) is kv_heads with q = B (each
// query head's B rows padded to a stick), or, with fewer padded rows and so
// faster at small B, this kernel with heads = KV heads, q = B * g and s = the
// cache length: the g query heads of a
// KV head, for each of the B sequences, are stacked as query rows
// (row i = b * g + r for query head kv * g + r of sequence b), and causal=false,
// since every stacked row is the newest token and sees all s cached keys.
// (B sequences share one cache only when they share its length and contents;
// per-sequence caches are B calls, or heads = B * KV heads with q = g.)
//
// o_token_major=true lays O out on the device with the query rows outermost
// (then the heads, then d): with d whole sticks (d = 128), the bytes of the
// (d x heads, q) activations that an output projection reads per token, so O
// transposed is a view of them, not a copy (apps/llm's prefill). Values are
// unchanged; the host build ignores it.
//
// key_mask=true adds an input key_mask(j) (s values, dtype) to the scaled
// scores of key j, for every query row and head: 0 attends key j, a large
// negative value (e.g. -30000, finite in fp16) drops it, so a cache compiled
// for a bucket length s attends only its first L valid positions. It is added
// after the causal mask (when every key a row sees is dropped, the common
// shift cancels and the row attends them as if none were).
//
// Formulation: flash-style, one pass over the keys and values. Per query tile
// the KV tiles stream through the scratchpad; per KV tile t:
//   S_t = Q.K_t^T (PT), s_t = S_t * scale + mask (SFU),
//   tm_t = rowmax(s_t), P_t = exp(s_t - tm_t) (rounded to dtype, as the PT takes it),
//   pv_t = P_t . [V_t | 1] (PT; the ones column makes the row sum l_t part of it),
// and the running state (O, m) of the query tile is updated in lockstep:
//   m' = max(m, tm_t),  O' = O * exp(m - m') + pv_t * exp(tm_t - m').
// O carries [O | l]: its ones column is the running row sum. The state is a
// Tuple Func (O and m updated by one definition, the only way Halide updates
// two values in lockstep); m is kept per column of O, so both elements have
// one shape and one stick layout. At the end O / l. The s x s scores are never
// materialized (in DRAM or in scratchpad): one query tile x KV tile block lives in
// the scratchpad. Both builds compute exactly these steps (the host build reads
// the padded keys as zeros), so they agree to rounding.
//
// Masks are tables in scratchpad, since the SFU has no iota: with causal,
// mask(z) = 0 for z < s - q + qp and -1e30 after, read at z = j - i + qp - 1
// (a dense, affine vector load; qp the padded query rows, so z >= 0 on every
// padded row too; q = s gives the table 0 below sp, read at j - i + sp - 1);
// without causal, mask(j) = -1e30 on the padded keys j >= s only (no mask at
// all when s is a whole number of KV tiles).
//
// For Spyre builds, d is padded to whole sticks, s to whole KV tiles and the
// query rows to qp (sp when q = s, else whole query tiles: one stick of rows
// for q up to a stick, so q = 4 computes 64 fp16 rows and drops 60)
// (tensor_constraints.h); padded d holds zeros (no effect on Q.K^T or O) and
// padded keys are masked. The schedules are in schedules/attention_schedule.cpp.
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "Halide.h"
#include "family_generator.h"
#include "attention_schedule.h"
#include "schedule_arithmetic.h"
#include "shape_limits.h"
#include "stock_legalization_rules.h"
#include "spyre_schedule.h"
#include "spyre_target.h"
#include "tensor_constraints.h"

namespace {

using namespace Halide;

class Attention
    : public spyre::FamilyGenerator<Attention, spyre::AttentionSpyreOptions, spyre::AttentionSpyrePlan> {
public:
    GeneratorParam<int> d_size{"d", 64};
    GeneratorParam<int> s_size{"s", 1024};
    GeneratorParam<int> q_size{"q", 0};  // query rows (0: s)
    GeneratorParam<int> heads{"heads", 8};
    GeneratorParam<int> kv_heads{"kv_heads", 0};  // KV heads of grouped-query attention (0: heads)
    GeneratorParam<Type> dtype{"dtype", Float(16)};
    GeneratorParam<bool> causal{"causal", false};
    GeneratorParam<float> scale{"scale", 0.0f};
    GeneratorParam<bool> key_mask{"key_mask", false};  // an additive mask input over the keys
    // O on the device with the query rows outermost, then the heads, then d (below).
    GeneratorParam<bool> o_token_major{"o_token_major", false};
    // Knobs of the Spyre schedule (SPYRE_ATTENTION_KNOBS); the defaults are the hand schedule.
    SPYRE_KNOB_GENERATOR_PARAMS(SPYRE_ATTENTION_KNOBS)
    SPYRE_KNOB_OPTIONS_FROM_PARAMS(SPYRE_ATTENTION_KNOBS, spyre::AttentionSpyreOptions)
    // Keys per KV tile: the steps of the online softmax, so part of the algorithm (0: planned).
    GeneratorParam<int> kv_tile{"kv_tile", 0};

    Input<Buffer<>> *Q = nullptr;     // Q(d, i, h)
    Input<Buffer<>> *Kt = nullptr;    // Kt(j, d, h)
    Input<Buffer<>> *V = nullptr;     // V(d, j, h)
    Input<Buffer<>> *KM = nullptr;    // key_mask(j), with key_mask=true
    Output<Buffer<>> *O = nullptr;    // O(d, i, h)

    void configure() {
        const Type t = dtype;
        _halide_user_assert(t == Float(16) || t == Float(32)) << "attention: dtype must be float16 or float32, not " << t;
        _halide_user_assert((int)d_size >= 1 && (int)s_size >= 1 && (int)heads >= 1)
            << "attention: d, s and heads must be positive (got d=" << (int)d_size << " s=" << (int)s_size << " heads=" << (int)heads << ")";
        _halide_user_assert((int)kv_heads >= 0 && (int)heads % kv_head_count() == 0)
            << "attention: heads=" << (int)heads << " must be a multiple of kv_heads=" << (int)kv_heads
            << " (query head h attends with KV head h / (heads / kv_heads))";
        _halide_user_assert((int)q_size >= 0) << "attention: q must be >= 0 (0: q = s), not " << (int)q_size;
        _halide_user_assert(!causal || query_rows() <= (int)s_size)
            << "attention: causal with q=" << query_rows() << " query rows over s=" << (int)s_size
            << " keys: the q queries are the last q of the s positions, so q must be <= s";
        _halide_user_assert((int)max_cores >= 0) << "attention: max_cores must be >= 0 (0: the machine's core count), not " << (int)max_cores;
        _halide_user_assert((int)tile >= 0) << "attention: tile must be >= 0 (0: chosen by the planner), not " << (int)tile;
        _halide_user_assert((int)kv_tile >= 0 && (int)kv_tile <= spyre::kMaxIntKnob)
            << "attention: kv_tile=" << (int)kv_tile << " is out of range: it takes 0 (chosen by the planner) to "
            << spyre::kMaxIntKnob;
        const spyre::ShapeDim d{"d", d_size}, s{"s", s_size}, h{"heads", heads};
        const spyre::ShapeDim kvh = group() == 1 ? h : spyre::ShapeDim{"kv_heads", kv_heads};
        const spyre::ShapeDim q = (int)q_size == 0 ? s : spyre::ShapeDim{"q", q_size};
        spyre::check_tensor_fits("attention", "Q", {d, q, h}, t);
        spyre::check_tensor_fits("attention", "Kt", {s, d, kvh}, t);
        Q = add_input<Buffer<>>("Q", t, 3);
        Kt = add_input<Buffer<>>("Kt", t, 3);
        V = add_input<Buffer<>>("V", t, 3);
        if (key_mask) KM = add_input<Buffer<>>("key_mask", t, 1);
        O = add_output<Buffer<>>("O", t, 3);
    }

    int query_rows() const { return (int)q_size == 0 ? (int)s_size : (int)q_size; }
    int kv_head_count() const { return (int)kv_heads == 0 ? (int)heads : (int)kv_heads; }
    int group() const { return (int)heads / kv_head_count(); }  // query heads per KV head

    void generate() {
        const Type t = dtype;
        const int d = d_size, s = s_size, q = query_rows();
        spyre::AttentionSpyreOptions options = knob_options();
        options.kv_tile = kv_tile;
        options.kv_heads = kv_heads;
        plan_ = plan_for(options);
        const bool spyre = spyre::is_spyre();
        // Padded head dim on Spyre (the device tensors), the true one on the host; the sequence
        // is padded to whole KV tiles in both builds (the host reads the padded keys as zeros).
        const int dp = spyre ? plan_.dp : d;
        const int sp = plan_.sp, qp = plan_.qp;
        const int nx = spyre ? plan_.nx : d + 1;
        const float k = (float)scale == 0.0f ? 1.0f / std::sqrt((float)d) : (float)scale;
        const float neg = -1e30f;  // exp(neg - m) == 0 for any finite score
        auto &f = f_;

        // Mask table.
        Expr bias = 0.0f;
        if (causal) {
            // Query row i (position s - q + i) attends key j iff j - i + qp - 1 < s - q + qp.
            const int visible = s - q + qp;
            f.mask(f.z) = 0.0f;
            f.rmask = RDom(visible, sp + qp - visible, "rmask");
            f.mask(f.rmask) = neg;
            bias = f.mask(f.j - f.i + qp - 1);
        } else if (sp > s) {
            f.mask(f.z) = 0.0f;
            f.rmask = RDom(s, sp - s, "rmask");
            f.mask(f.rmask) = neg;
            bias = f.mask(f.j);
        }
        has_mask_ = f.mask.defined();

        // Keys are indexed by (j, t): key j of KV tile t is t * T + j. The host build reads
        // the padded keys s <= key < sp as zeros (they are masked), like the padded device tensors.
        const int T = plan_.kv_tile;
        const int tiles = plan_.sp / T;
        Func kt_src = *Kt, v_src = *V;
        const int kvhs = kv_head_count();
        if (!spyre && sp > s) {
            kt_src = BoundaryConditions::constant_exterior(*Kt, Expr(cast(t, 0.0f)), {{0, s}, {0, d}, {0, kvhs}});
            v_src = BoundaryConditions::constant_exterior(*V, Expr(cast(t, 0.0f)), {{0, d}, {0, s}, {0, kvhs}});
        }
        // Grouped-query attention: query head h reads KV head h / g (heads kvh * g .. kvh * g + g - 1 share kvh).
        const int g = group();
        const Expr kv_head = g == 1 ? Expr(f.h) : f.h / g;
        const Expr key = f.t * T + f.j;
        if (has_mask_) bias = substitute(f.j.name(), key, bias);
        if (KM) {
            // The host build reads the padded keys' mask as zeros (the keys themselves are masked).
            Func km_src = *KM;
            if (!spyre && sp > s) km_src = BoundaryConditions::constant_exterior(*KM, Expr(cast(t, 0.0f)), {{0, s}});
            bias = bias + cast<float>(km_src(key));
        }

        // Scores of one KV tile: S(j, t, i) = sum_d Kt(key, d) Q(d, i), s = S * scale + mask.
        f.rd = RDom(0, dp, "rd");
        f.scores(f.j, f.t, f.i, f.h) = 0.0f;
        f.scores(f.j, f.t, f.i, f.h) += cast<float>(kt_src(key, f.rd, kv_head)) * cast<float>((*Q)(f.rd, f.i, f.h));
        f.s(f.j, f.t, f.i, f.h) = f.scores(f.j, f.t, f.i, f.h) * k + bias;
        // Per KV tile: its row max, its probabilities and [O | l] of the tile alone.
        f.rk = RDom(0, T, "rk");
        f.tile_max(f.i, f.t, f.h) = neg;
        // A KV tile of several f32 sticks: the row max in two steps (the max is exact, so the
        // same values), lane by lane over the row's sticks, then over one stick's lanes, because
        // a row reduction costs much more per stick than an elementwise max (attention_schedule.h).
        const int fl = spyre::stick_lanes(Float(32));
        if (T % fl == 0 && T > fl) {
            f.rs = RDom(0, T / fl, "rs");
            f.rl = RDom(0, fl, "rl");
            f.lane_max(f.l, f.t, f.i, f.h) = neg;
            f.lane_max(f.l, f.t, f.i, f.h) = max(f.lane_max(f.l, f.t, f.i, f.h), f.s(f.rs * fl + f.l, f.t, f.i, f.h));
            f.tile_max(f.i, f.t, f.h) = max(f.tile_max(f.i, f.t, f.h), f.lane_max(f.rl, f.t, f.i, f.h));
        } else {
            f.tile_max(f.i, f.t, f.h) = max(f.tile_max(f.i, f.t, f.h), f.s(f.rk, f.t, f.i, f.h));
        }
        f.probs(f.j, f.t, f.i, f.h) = cast(t, exp(f.s(f.j, f.t, f.i, f.h) - f.tile_max(f.i, f.t, f.h)));
        f.rv = RDom(0, dp, "rv");
        f.vx(f.n, f.j, f.h) = cast(t, 1.0f);
        f.vx(f.rv, f.j, f.h) = v_src(f.rv, f.j, kv_head);
        f.pv(f.n, f.i, f.t, f.h) = 0.0f;
        f.pv(f.n, f.i, f.t, f.h) += cast<float>(f.vx(f.n, f.t * T + f.rk, f.h)) * cast<float>(f.probs(f.rk, f.t, f.i, f.h));
        // The running state over the KV tiles: (O, m), rescaled to the new max at each tile.
        f.rt = RDom(0, tiles, "rt");
        f.state(f.n, f.i, f.h) = Tuple(0.0f, neg);
        {
            const Expr m_old = f.state(f.n, f.i, f.h)[1];
            const Expr tm = f.tile_max(f.i, f.rt, f.h);
            const Expr m_new = max(m_old, tm);
            f.state(f.n, f.i, f.h) = Tuple(f.state(f.n, f.i, f.h)[0] * exp(m_old - m_new) +
                                               f.pv(f.n, f.i, f.rt, f.h) * exp(tm - m_new),
                                           m_new);
        }
        f.result(f.d, f.i, f.h) = cast(t, f.state(f.d, f.i, f.h)[0] / f.state(dp, f.i, f.h)[0]);
        (*O)(f.d, f.i, f.h) = f.result(f.d, f.i, f.h);
        f.out = *O;
        // The host build's state and pv rows are the nx of [O | l], whatever the schedule.
        if (!spyre) {
            f.state.bound(f.n, 0, nx);
            f.pv.bound(f.n, 0, nx);
        }

        constrain_tensors();
    }

    // Spyre: s padded to whole KV tiles, the query rows to qp (query tiles divide it), d to whole sticks.
    void constrain_tensors() {
        const int d = d_size, s = s_size, hs = heads, kvhs = kv_head_count(), q = query_rows();
        const int T = plan_.kv_tile;
        spyre::constrain_tensor(*Q, {d, q, hs}, {1, plan_.qp, 1});
        spyre::constrain_tensor(*Kt, {s, d, kvhs}, {T, plan_.lanes, 1});  // d padded like Q's
        spyre::constrain_tensor(*V, {d, s, kvhs}, {1, T, 1});
        spyre::constrain_tensor(*O, {d, q, hs}, {1, plan_.qp, 1});
        if (KM) spyre::constrain_tensor(*KM, {s}, {T});
        // o_token_major: the device order (i, h, d), outermost first, so the bytes of O are those
        // of an O(d, h, i) in the default order, the (d x heads, tokens) activations a projection
        // reads; the runtime then views one as the other (spyre_device_reshape of O transposed).
        if (spyre::is_spyre() && o_token_major) spyre::set_device_layout(*O, spyre::StickLayout{0, {1, 2, 0}});
    }

    // `scale` as the shortest decimal that reads back as the same float.
    static std::string float_string(float v) {
        std::string str;
        for (int digits = 6; digits <= 9; digits++) {
            std::ostringstream os;
            os.precision(digits);
            os << v;
            str = os.str();
            std::istringstream is(str);
            float back = 0;
            if (is >> back && back == v) break;
        }
        return str;
    }

    // The family declaration (family_generator.h).
    static constexpr const char *kOptionsType = "spyre::AttentionSpyreOptions";
    std::string family() const { return "attention"; }
    spyre::AttentionSpyrePlan plan_for(const spyre::AttentionSpyreOptions &o) const {
        return spyre::plan_attention_spyre(d_size, s_size, heads, q_size, dtype, o);
    }
    // The KV tile and the KV heads are the algorithm's (GeneratorParams, not knobs).
    spyre::AttentionSpyreOptions options_from(const spyre::KnobValues &v) const {
        spyre::AttentionSpyreOptions o = spyre::options_of<spyre::AttentionSpyreOptions>(v);
        o.kv_tile = kv_tile;
        o.kv_heads = group() > 1 ? (int)kv_heads : 0;
        return o;
    }
    // The algorithm was built with the KV tiles and padded extents of plan_; the knobs must not
    // change them (the query tile may change).
    void check_plan(const spyre::AttentionSpyrePlan &p) const {
        _halide_user_assert(p.dp == plan_.dp && p.sp == plan_.sp && p.qp == plan_.qp && p.nx == plan_.nx &&
                            p.kv_tile == plan_.kv_tile)
            << "attention: the schedule knobs changed the algorithm (query tile " << p.tile << ": KV tiles of "
            << p.kv_tile << ", s padded to " << p.sp << "; the algorithm has KV tiles of " << plan_.kv_tile
            << " and s padded to " << plan_.sp << ")";
    }
    // The wrappers are made here, not in generate(): the legalization layer cannot
    // save a Func that has wrappers.
    void schedule_spyre() {
        f_.q_in = Q->in();
        f_.kt_in = Kt->in(f_.scores);
        f_.v_in = V->in(f_.vx);
        if (KM) f_.key_mask_in = KM->in();
        spyre::schedule_attention_spyre(f_, plan_, has_mask_);
    }
    void schedule_host() { spyre::schedule_attention_host(f_, get_target()); }
    spyre::KnobValues shape_params() const {
        spyre::KnobValues p = {{"d", std::to_string((int)d_size)},
                               {"s", std::to_string((int)s_size)},
                               {"q", std::to_string((int)q_size)},
                               {"heads", std::to_string((int)heads)},
                               {"dtype", spyre::dtype_param(dtype)},
                               {"causal", causal ? "true" : "false"},
                               {"key_mask", key_mask ? "true" : "false"},
                               {"scale", float_string(scale)},
                               {"kv_tile", std::to_string((int)kv_tile)}};
        if (group() > 1) p["kv_heads"] = std::to_string((int)kv_heads);
        return p;
    }
    // Query tiles of whole sticks that fit and keep the algorithm (KV tiles, padded sequence).
    std::map<std::string, std::vector<int>> knob_candidates() const {
        std::vector<int> tiles = {0};
        for (int c : {64, 128, 256}) {
            if (keeps_algorithm(c, dtype)) tiles.push_back(c);
        }
        return {{"tile", tiles}};
    }
    std::string describe(const spyre::AttentionSpyrePlan &p) const {
        return "query tiles of " + std::to_string(p.tile) + ", KV tiles of " + std::to_string(p.kv_tile) + " (s padded to " +
               std::to_string(p.sp) + ", the query rows to " + std::to_string(p.qp) + ", d to " + std::to_string(p.dp) +
               "), cores " + std::to_string(p.ch) + " x " + std::to_string(p.cq) + " (heads x query tiles), " +
               (p.double_buffer || p.double_buffer_q ? "double" : "single") + "-buffered, " +
               (p.resident_kv ? "K and V resident per KV head, " : "") +
               (p.softmax_ahead ? "softmax a step ahead, " : "") + (p.values_ahead ? "[V | 1] a step ahead, " : "") +
               std::to_string(p.footprint_bytes) +
               " scratchpad bytes per core";
    }
    std::string knob_lines(const spyre::AttentionSpyreOptions &o) const {
        std::string s = spyre::knob_assignments(o) + "options.kv_tile = " + std::to_string(o.kv_tile) +
                        ";  // the generator's kv_tile\n";
        if (o.kv_heads > 0) s += "options.kv_heads = " + std::to_string(o.kv_heads) + ";  // the generator's kv_heads\n";
        return s;
    }
    std::string schedule_call() const {
        return "f_.q_in = Q->in();\n"
               "f_.kt_in = Kt->in(f_.scores);\n"
               "f_.v_in = V->in(f_.vx);\n"
               "if (KM) f_.key_mask_in = KM->in();\n"
               "spyre::schedule_attention_spyre(f_, spyre::plan_attention_spyre(d, s, heads, q, dtype, options), "
               "has_mask_);\n";
    }

    // Whether a forced query tile fits and keeps the KV tiles and padded extents of plan_ (which the
    // algorithm was built with).
    bool keeps_algorithm(int T, const Type &t_in) const {
        spyre::AttentionSpyreOptions o;
        o.tile = T;
        o.kv_tile = kv_tile;
        o.kv_heads = kv_heads;
        try {
            const spyre::AttentionSpyrePlan p = spyre::plan_attention_spyre(d_size, s_size, heads, q_size, t_in, o);
            return p.sp == plan_.sp && p.qp == plan_.qp && p.dp == plan_.dp && p.nx == plan_.nx && p.kv_tile == plan_.kv_tile;
        } catch (const Halide::CompileError &) {
            return false;
        }
    }

    // The legalization of a stock schedule: the query tile from its tile of O
    // along i (else its split of the keys in the scores, else the sequence),
    // rounded up to whole sticks and lowered by a stick until it fits and
    // divides the padded sequence; the KV tiles are the algorithm's; the state
    // and the result fused into the query tiles, the per-tile Funcs into the KV tiles.
    spyre::KnobValues legalize_stock(const spyre::StockScheduleDecisions &d, std::vector<std::string> *kept,
                                     std::vector<std::string> *changed) {
        const Type t_in = dtype;
        const std::string o = Func(*O).name();
        auto describe = [](int t) { return t > 0 ? std::to_string(t) : std::string("untiled"); };
        const int lanes = plan_.lanes;
        const int stock_i = d.tile(o, 0, f_.i.name());
        const int stock_j = d.tile(f_.scores.name(), 1, f_.j.name());
        const int wanted = stock_i > 0 ? stock_i : stock_j > 0 ? stock_j : query_rows();
        int T = spyre::round_up(wanted, lanes);
        while (T > lanes && !keeps_algorithm(T, t_in)) T -= lanes;
        if (!keeps_algorithm(T, t_in)) throw std::runtime_error("no query tile of whole sticks fits and divides the padded sequence");
        const std::string Ts = std::to_string(T);
        const std::string adjusted = T == spyre::round_up(wanted, lanes) ? "" : " (lowered to fit and divide the padded sequence)";
        kept->push_back("tile of O along i: " + describe(stock_i) + " -> " + Ts + " queries (whole sticks)" + adjusted);
        (stock_j == plan_.kv_tile ? kept : changed)
            ->push_back("split of the keys in the scores: " + describe(stock_j) + " -> KV tiles of " +
                        std::to_string(plan_.kv_tile) + " keys (the algorithm's kv_tile)");
        for (const Func &g : {f_.state, f_.result}) {
            spyre::legalize_fusion(d, g, o, f_.i.name(), "per query tile in the scratchpad", kept, changed);
        }
        for (const Func &g : {f_.scores, f_.s, f_.tile_max, f_.probs, f_.vx, f_.pv}) {
            spyre::legalize_fusion(d, g, f_.state.name(), f_.rt.x.name(), "per KV tile in the scratchpad", kept, changed);
        }
        spyre::legalize_parallel_and_vectors(d, o, lanes, kept, changed);
        spyre::AttentionSpyreOptions knobs;
        knobs.double_buffer = false;
        knobs.tile = T;
        return spyre::knob_values(knobs);
    }

private:
    spyre::AttentionFuncs f_{Func(), Func("result"), Func("state"), Func("pv"), Func("vx"), Func("probs"),
                             Func("tile_max"), Func("scores"), Func("s"), Func("mask"), Func(), Func(), Func(),
                             RDom(), RDom(), RDom(), RDom(), RDom(),
                             Var("d"), Var("i"), Var("h"), Var("j"), Var("t"), Var("n"), Var("z")};
    bool has_mask_ = false;
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Attention, attention)
