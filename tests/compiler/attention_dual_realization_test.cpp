// gen_attention built for Spyre against its host build on random data, with
// and without the causal mask, both dtypes, over head dims and sequence
// lengths that are not multiples of a stick or a tile; the host build is
// itself checked against a direct double-precision attention. Cases with q != s
// are decode shapes: q query rows (the last q positions) over s keys; cases
// with `valid` pass an additive key mask that drops the keys after it; cases
// with kv_heads < heads are grouped-query attention (query head h reads KV
// head h / (heads / kv_heads)), some with fewer cores so that a core's heads
// span several groups.
#include <gtest/gtest.h>

#include "attention_schedule.h"
#include "jit_helpers.h"

namespace spyre::testing {
namespace {

struct AttentionCase {
    int d, s, heads;
    const char *dtype;
    bool causal;
    int kv_tile = 0;  // 0: the planner's; else keys per KV tile (the online softmax's steps)
    int q = 0;        // query rows (0: s)
    int valid = 0;    // > 0: key_mask=true, the first `valid` keys get random additive values, the others -30000
    int kv_heads = 0;  // 0: heads; else grouped-query attention with this many KV heads
    int max_cores = 0; // 0: the machine's
    bool o_token_major = false;  // O laid out on the device query rows outermost (the values are the same)
    int rows() const { return q == 0 ? s : q; }
    int kv() const { return kv_heads == 0 ? heads : kv_heads; }
    int group() const { return heads / kv(); }
};

double mask_at(const Halide::Buffer<> &mask, int j) {
    if (mask.type() == Halide::Float(32)) return mask.as<float>()(j);
    return (double)(float)mask.as<Halide::float16_t>()(j);
}

// O(d, i, h) = softmax_j(sum_d Q(d,i,h) Kt(j,d,h) / sqrt(d) [+ mask(j)] [j <= s - q + i]) V(d, j, h), in
// double: query row i stands at position s - q + i.
std::vector<double> direct_attention(const Halide::Buffer<> &Q, const Halide::Buffer<> &Kt, const Halide::Buffer<> &V,
                                     const Halide::Buffer<> &mask, const AttentionCase &c) {
    std::vector<double> out((size_t)c.d * c.rows() * c.heads);
    const double scale = 1.0 / std::sqrt((double)(float)c.d);
    std::vector<double> p(c.s);
    for (int h = 0; h < c.heads; h++)
        for (int i = 0; i < c.rows(); i++) {
            const int keys = c.causal ? c.s - c.rows() + i + 1 : c.s;
            double m = -1e300, l = 0;
            for (int j = 0; j < keys; j++) {
                double acc = 0;
                for (int e = 0; e < c.d; e++) acc += value_at(Q, e, i, h) * value_at(Kt, j, e, h / c.group());
                p[j] = acc * scale + (c.valid ? mask_at(mask, j) : 0.0);
                m = std::max(m, p[j]);
            }
            for (int j = 0; j < keys; j++) l += (p[j] = std::exp(p[j] - m));
            for (int e = 0; e < c.d; e++) {
                double o = 0;
                for (int j = 0; j < keys; j++) o += p[j] * value_at(V, e, j, h / c.group());
                out[((size_t)h * c.rows() + i) * c.d + e] = o / l;
            }
        }
    return out;
}

Halide::Buffer<> scaled_random(const std::string &name, Halide::Type t, std::vector<int> extents, uint64_t seed, float k) {
    Halide::Buffer<> b = random_buffer(name, t, extents, seed);
    if (t == Halide::Float(32)) b.as<float>().for_each_value([k](float &v) { v *= k; });
    else b.as<Halide::float16_t>().for_each_value([k](Halide::float16_t &v) { v = Halide::float16_t((float)v * k); });
    return b;
}

class AttentionDualRealization : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionDualRealization, SpyreMatchesHost) {
    const AttentionCase c = GetParam();
    const Halide::Type t = std::string(c.dtype) == "float16" ? Halide::Float(16) : Halide::Float(32);
    // Q and K in [-2, 2): scores of a few units, so the softmax is far from uniform.
    Halide::Buffer<> Q = scaled_random("Q", t, {c.d, c.rows(), c.heads}, 21, 2.0f);
    Halide::Buffer<> Kt = scaled_random("Kt", t, {c.s, c.d, c.kv()}, 22, 2.0f);
    Halide::Buffer<> V = random_buffer("V", t, {c.d, c.s, c.kv()}, 23);
    Halide::Buffer<> mask = random_buffer("key_mask", t, {c.s}, 24);
    for (int j = c.valid; j < c.s; j++) {
        if (t == Halide::Float(32)) mask.as<float>()(j) = -30000.0f;
        else mask.as<Halide::float16_t>()(j) = Halide::float16_t(-30000.0f);
    }
    std::map<std::string, std::string> params = {{"d", std::to_string(c.d)},
                                                       {"s", std::to_string(c.s)},
                                                       {"q", std::to_string(c.q)},
                                                       {"heads", std::to_string(c.heads)},
                                                       {"dtype", c.dtype},
                                                       {"causal", c.causal ? "true" : "false"},
                                                       {"kv_tile", std::to_string(c.kv_tile)},
                                                       {"key_mask", c.valid ? "true" : "false"}};
    if (c.kv_heads) params["kv_heads"] = std::to_string(c.kv_heads);
    if (c.max_cores) params["max_cores"] = std::to_string(c.max_cores);
    if (c.o_token_major) params["o_token_major"] = "true";
    set_compiling_for_spyre(true);
    AttentionSpyreOptions options;
    options.kv_tile = c.kv_tile;
    options.kv_heads = c.kv_heads;
    options.max_cores = c.max_cores;
    const AttentionSpyrePlan plan = plan_attention_spyre(c.d, c.s, c.heads, c.q, t, options);
    set_compiling_for_spyre(false);
    Halide::Buffer<> Qp = padded_copy(Q, {plan.dp, plan.qp, c.heads});
    Halide::Buffer<> Ktp = padded_copy(Kt, {plan.sp, plan.dp, c.kv()});
    Halide::Buffer<> Vp = padded_copy(V, {plan.dp, plan.sp, c.kv()});
    const std::vector<int> out_ext = {c.d, c.rows(), c.heads};
    Halide::Buffer<> spyre, host;
    if (c.valid) {
        spyre = run_generator("attention", params, true, t, out_ext, Qp, Ktp, Vp, padded_copy(mask, {plan.sp}));
        host = run_generator("attention", params, false, t, out_ext, Q, Kt, V, mask);
    } else {
        spyre = run_generator("attention", params, true, t, out_ext, Qp, Ktp, Vp);
        host = run_generator("attention", params, false, t, out_ext, Q, Kt, V);
    }
    const std::vector<double> direct = direct_attention(Q, Kt, V, mask, c);

    // Outputs are convex combinations of V (|V| < 1). fp32: rounding of the two
    // reductions (over d and over s) and of exp on each side. fp16: P is rounded
    // to fp16 before the PV matmul and the output rounds once; exp differs in its
    // last bits between host and SFU, which can flip a P rounding.
    const double red = std::sqrt((double)c.s) + std::sqrt((double)c.d);
    const double tol = t == Halide::Float(32) ? 2e-6 * red + 1e-6 : 1e-3 + 1e-4 * red;
    const double tol_direct = t == Halide::Float(32) ? 1e-5 * red : 3e-3 + 5e-4 * red;
    double max_err = 0, max_err_direct = 0, max_ref = 0;
    int distinct = 0;
    const double first = value_at(host, 0, 0, 0);
    for (int h = 0; h < c.heads; h++)
        for (int i = 0; i < c.rows(); i++)
            for (int e = 0; e < c.d; e++) {
                const double hv = value_at(host, e, i, h), sv = value_at(spyre, e, i, h);
                max_err = std::max(max_err, std::fabs(hv - sv));
                max_err_direct = std::max(max_err_direct, std::fabs(hv - direct[((size_t)h * c.rows() + i) * c.d + e]));
                max_ref = std::max(max_ref, std::fabs(hv));
                if (hv != first) distinct++;
            }
    EXPECT_GT(distinct, 0) << "the host reference is constant: the test could pass by accident";
    EXPECT_GT(max_ref, 0.1) << "the host reference is near zero: the test could pass by accident";
    EXPECT_LE(max_err_direct, tol_direct) << "the host build is not attention";
    EXPECT_LE(max_err, tol) << "max abs error of the Spyre build against the host build";
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionDualRealization,
                         ::testing::Values(AttentionCase{64, 256, 2, "float16", false},  // whole tiles: no mask
                                           AttentionCase{64, 256, 2, "float16", true},
                                           AttentionCase{40, 100, 3, "float32", false},  // ragged d and s: key padding masked
                                           AttentionCase{40, 100, 3, "float32", true},
                                           AttentionCase{80, 200, 1, "float16", true},   // ragged, one KV tile of 256
                                           AttentionCase{80, 200, 1, "float16", true, 64},  // ragged, four KV tiles
                                           AttentionCase{64, 512, 2, "float16", false, 64},  // eight KV tiles: the running max moves
                                           AttentionCase{32, 384, 2, "float32", false},  // three KV tiles
                                           AttentionCase{17, 33, 2, "float16", false},  // d below a stick
                                           // Decode shapes, q query rows over s keys: GQA at batch 1 (4 query heads per KV head)
                                           AttentionCase{128, 512, 8, "float16", false, 0, 4},
                                           AttentionCase{128, 512, 8, "float16", true, 0, 4},  // rows see keys <= 508..511
                                           AttentionCase{64, 300, 2, "float16", false, 0, 32},  // ragged keys, batch 8
                                           AttentionCase{64, 300, 2, "float32", true, 0, 32},
                                           AttentionCase{40, 300, 2, "float32", true, 64, 32},  // three KV tiles, causal offset moves
                                           AttentionCase{128, 512, 2, "float16", false, 0, 1},  // one query row
                                           AttentionCase{64, 200, 1, "float16", true, 0, 1},
                                           AttentionCase{64, 256, 2, "float16", true, 0, 200},  // more than one query tile
                                           AttentionCase{32, 40, 2, "float32", false, 0, 100},  // more queries than keys
                                           // An additive key mask: a cache of 512 (or 300) positions, the first ones valid
                                           AttentionCase{128, 512, 8, "float16", false, 0, 4, 200},
                                           AttentionCase{64, 300, 2, "float32", false, 64, 32, 77},
                                           AttentionCase{64, 256, 2, "float16", true, 0, 0, 130},  // with the causal mask
                                           // Granite-3-8B: GQA decode (8 KV heads, 4 query heads each stacked as
                                           // rows) over a 1024-key cache bucket holding 1000 valid keys, at batch 1
                                           // and 8 (heads = 8 sequences x 8 KV heads), and a causal prefill.
                                           AttentionCase{128, 1024, 8, "float16", false, 0, 4, 1000},
                                           AttentionCase{128, 1024, 64, "float16", false, 0, 4, 1000},
                                           AttentionCase{128, 512, 32, "float16", true},
                                           // Grouped-query attention: K and V of kv_heads heads, query head h
                                           // reads KV head h / (heads / kv_heads)
                                           AttentionCase{64, 256, 4, "float16", false, 0, 0, 0, 2},
                                           AttentionCase{40, 100, 6, "float32", true, 0, 0, 0, 2},  // ragged, groups of 3
                                           AttentionCase{40, 100, 6, "float32", false, 0, 0, 0, 2, 4},  // 4 cores: 3 heads a core would span two groups, so 2 cores
                                           AttentionCase{32, 128, 8, "float16", true, 64, 0, 0, 2, 2},  // 2 cores: 4 heads (one group) each
                                           AttentionCase{32, 128, 16, "float32", false, 0, 0, 0, 2, 1},  // 1 core: 2 groups of 8
                                           AttentionCase{64, 300, 8, "float16", true, 0, 32, 77, 2},  // decode, key mask
                                           AttentionCase{64, 300, 4, "float32", false, 64, 1, 0, 1},  // one KV head, q = 1
                                           // Granite-3-8B causal prefill: 32 query heads over 8 KV heads
                                           AttentionCase{128, 512, 32, "float16", true, 0, 0, 0, 8},
                                           // O token-major on the device (o_token_major): ragged d and s,
                                           // and query rows padded to a tile (q = 200) with GQA.
                                           AttentionCase{40, 100, 3, "float32", true, 0, 0, 0, 0, 0, true},
                                           AttentionCase{64, 256, 4, "float16", true, 0, 200, 0, 2, 0, true}),
                         [](const auto &info) {
                             const AttentionCase &c = info.param;
                             return std::string(c.dtype) + "_d" + std::to_string(c.d) + "_s" + std::to_string(c.s) +
                                    "_h" + std::to_string(c.heads) + (c.causal ? "_causal" : "") +
                                    (c.kv_tile ? "_kv" + std::to_string(c.kv_tile) : "") +
                                    (c.q ? "_q" + std::to_string(c.q) : "") +
                                    (c.valid ? "_valid" + std::to_string(c.valid) : "") +
                                    (c.kv_heads ? "_kvh" + std::to_string(c.kv_heads) : "") +
                                    (c.max_cores ? "_cores" + std::to_string(c.max_cores) : "") +
                                    (c.o_token_major ? "_o_token_major" : "");
                         });

// causal puts the q queries at the last q of the s positions: more queries than keys is refused, naming q and s.
TEST(AttentionParams, CausalWithMoreQueriesThanKeysIsRefused) {
    std::string msg;
    try {
        build_generator("attention", {{"d", "64"}, {"s", "64"}, {"q", "128"}, {"heads", "1"}, {"causal", "true"}}, true);
    } catch (const Halide::CompileError &e) {
        msg = e.what();
    }
    set_compiling_for_spyre(false);
    EXPECT_NE(msg.find("q=128"), std::string::npos) << msg;
    EXPECT_NE(msg.find("s=64"), std::string::npos) << msg;
}

// heads must be a multiple of kv_heads: refused at configure time, naming both.
TEST(AttentionParams, HeadsNotAMultipleOfKvHeadsIsRefused) {
    std::string msg;
    try {
        build_generator("attention", {{"d", "64"}, {"s", "64"}, {"heads", "6"}, {"kv_heads", "4"}}, true);
    } catch (const Halide::CompileError &e) {
        msg = e.what();
    }
    set_compiling_for_spyre(false);
    EXPECT_NE(msg.find("heads=6"), std::string::npos) << msg;
    EXPECT_NE(msg.find("kv_heads=4"), std::string::npos) << msg;
}

// Streamed K and V: the V tiles get a second copy where their loads pace the KV steps (decode:
// a step's work is a few query rows', and one V copy's load waited after the step's softmax),
// not where the softmax hides the load (a prefill's 128-query tiles). The decode shape below
// is a dual realization's, so the two-copy schedule is checked against the host there.
TEST(AttentionPlan, VTilesGetTwoCopiesWhereTheirLoadsPaceTheSteps) {
    set_compiling_for_spyre(true);
    AttentionSpyreOptions options;
    const AttentionSpyrePlan decode = plan_attention_spyre(128, 512, 8, 4, Halide::Float(16), options);
    const AttentionSpyrePlan prefill = plan_attention_spyre(64, 1024, 8, 0, Halide::Float(16), options);
    options.double_buffer = false;
    const AttentionSpyrePlan single = plan_attention_spyre(128, 512, 8, 4, Halide::Float(16), options);
    set_compiling_for_spyre(false);
    EXPECT_TRUE(decode.double_buffer && decode.double_buffer_v);
    EXPECT_TRUE(prefill.double_buffer);
    EXPECT_FALSE(prefill.double_buffer_v);
    EXPECT_FALSE(single.double_buffer || single.double_buffer_v) << "double_buffer=false keeps every tile in one copy";
    EXPECT_GT(decode.footprint_bytes, single.footprint_bytes + 2 * (int64_t)decode.dp * decode.kv_tile * 2 - 1)
        << "the footprint counts the second Kt and V tiles";
}

// Each step's scores and softmax computed a step ahead (softmax_ahead) where the steps are not
// paced by their loads: prefill, streamed (with [V | 1], values_ahead) or with K and V resident
// (the Granite prefill's GQA),
// not decode, and never with double_buffer=false. The Granite prefill and a streamed prefill are
// dual realizations above, so both pipelines are checked against the host there.
TEST(AttentionPlan, TheSoftmaxIsComputedAStepAheadInPrefillNotInDecode) {
    set_compiling_for_spyre(true);
    AttentionSpyreOptions options;
    const AttentionSpyrePlan streamed = plan_attention_spyre(64, 1024, 8, 0, Halide::Float(16), options);
    const AttentionSpyrePlan decode = plan_attention_spyre(128, 512, 8, 4, Halide::Float(16), options);
    options.kv_heads = 8;
    const AttentionSpyrePlan gqa = plan_attention_spyre(128, 512, 32, 0, Halide::Float(16), options);
    options.double_buffer = false;
    const AttentionSpyrePlan single = plan_attention_spyre(128, 512, 32, 0, Halide::Float(16), options);
    set_compiling_for_spyre(false);
    EXPECT_TRUE(streamed.softmax_ahead && streamed.values_ahead) << "streamed, [V | 1] is built a step ahead too";
    EXPECT_TRUE(gqa.resident_kv && gqa.softmax_ahead);
    EXPECT_FALSE(gqa.values_ahead) << "resident, [V | 1] is built once per KV head";
    EXPECT_FALSE(decode.softmax_ahead);
    EXPECT_FALSE(single.softmax_ahead);
    EXPECT_GE(gqa.footprint_bytes - single.footprint_bytes, (int64_t)gqa.tile * gqa.kv_tile * 2)
        << "the footprint counts P's second copy";
}

}  // namespace
}  // namespace spyre::testing
