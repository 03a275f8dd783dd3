// gen_matmul built for Spyre against the host build of the same generator, on
// random non-constant data, over shapes that are not multiples of a stick, a
// tile or the core count, both dtypes and every activation of the epilogue,
// with and without the fused residual (residual=true: C = act(A.B + bias) + R),
// the SwiGLU-gated product (activation=swiglu), and B chains gathered
// (b_forwarding=gathered: each core of a chain loads a share of every B tile),
// and A's whole-K panel resident for all of a core's N tiles (a_staging=resident),
// and two accumulators for whole-K tiles (accumulator=double: a tile's matmul runs
// during the previous tile's epilogue and store), and each core's whole-K B slice
// resident, gathered over a chain of all the cores (b_staging=resident),
// and a float32 factor per row (row_scale=true: C = act(scale(m) A.B + bias) [+ R]).
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "jit_helpers.h"
#include "matmul_schedule.h"

namespace spyre::testing {
namespace {

struct MatmulCase {
    int m, n, k;
    const char *dtype;
    const char *activation;
    bool residual = false;
    bool shared_weight_layout = false;  // B and the bias padded past the plan's N (one layout for every M)
    int tile_m = 0, tile_n = 0;           // forced knobs (0: the planner's)
    const char *b_forwarding = "auto";    // the b_forwarding knob
    const char *a_staging = "auto";       // the a_staging knob
    const char *accumulator = "auto";     // the accumulator knob
    const char *b_staging = "auto";       // the b_staging knob
    int max_cores = 0;                    // the max_cores knob (0: the machine's cores)
};

Activation activation_of(const std::string &a) {
    if (a == "relu") return Activation::Relu;
    if (a == "gelu") return Activation::Gelu;
    if (a == "silu") return Activation::Silu;
    return Activation::None;
}

std::string case_name(const ::testing::TestParamInfo<MatmulCase> &info) {
    const MatmulCase &c = info.param;
    return std::string(c.dtype) + "_" + c.activation + "_m" + std::to_string(c.m) + "_n" + std::to_string(c.n) + "_k" +
           std::to_string(c.k) + (c.residual ? "_residual" : "") +
           (c.shared_weight_layout ? "_shared_weight_layout" : "") +
           (c.tile_m ? "_tiles" + std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n) : "") +
           (std::string(c.b_forwarding) != "auto" ? std::string("_b_") + c.b_forwarding : "") +
           (std::string(c.a_staging) != "auto" ? std::string("_a_") + c.a_staging : "") +
           (std::string(c.accumulator) != "auto" ? std::string("_acc_") + c.accumulator : "") +
           (std::string(c.b_staging) != "auto" ? std::string("_b_") + c.b_staging : "") +
           (c.max_cores ? "_c" + std::to_string(c.max_cores) : "");
}

class MatmulDualRealization : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(MatmulDualRealization, SpyreMatchesHost) {
    const MatmulCase c = GetParam();
    const Halide::Type t = std::string(c.dtype) == "float16" ? Halide::Float(16) : Halide::Float(32);
    Halide::Buffer<> A = random_buffer("A", t, {c.k, c.m}, 21);
    Halide::Buffer<> B = random_buffer("B", t, {c.n, c.k}, 22);
    Halide::Buffer<> bias = random_buffer("bias", t, {c.n}, 23);
    Halide::Buffer<> R = random_buffer("R", t, {c.n, c.m}, 24);
    std::map<std::string, std::string> params = {{"m", std::to_string(c.m)},
                                                 {"n", std::to_string(c.n)},
                                                 {"k", std::to_string(c.k)},
                                                 {"dtype", c.dtype},
                                                 {"activation", c.activation}};
    if (c.residual) params["residual"] = "true";
    if (c.shared_weight_layout) params["shared_weight_layout"] = "true";
    if (c.tile_m) params["tile_m"] = std::to_string(c.tile_m);
    if (c.tile_n) params["tile_n"] = std::to_string(c.tile_n);
    params["b_forwarding"] = c.b_forwarding;
    params["a_staging"] = c.a_staging;
    params["accumulator"] = c.accumulator;
    params["b_staging"] = c.b_staging;
    if (c.max_cores) params["max_cores"] = std::to_string(c.max_cores);
    MatmulSpyreOptions o;
    o.max_cores = c.max_cores;
    o.tile_m = c.tile_m, o.tile_n = c.tile_n, o.b_forwarding = c.b_forwarding, o.a_staging = c.a_staging;
    o.accumulator = c.accumulator;
    o.b_staging = c.b_staging;
    set_compiling_for_spyre(true);
    const MatmulSpyrePlan plan = plan_matmul_spyre(
        MatmulShape{c.m, c.n, c.k, t, activation_of(c.activation), c.residual, c.shared_weight_layout}, o);
    set_compiling_for_spyre(false);
    if (std::string(c.b_forwarding) == "gathered") {
        ASSERT_TRUE(plan.b_shared && plan.b_gathered) << "the case should run a gathered B chain (cm=" << plan.cm << ")";
        EXPECT_EQ(plan.cm * plan.cn, scheduling_machine().cores) << "gathered chains fill the ring";
    }
    if (std::string(c.b_forwarding) == "whole") {
        EXPECT_FALSE(plan.b_gathered);
    }
    if (std::string(c.a_staging) == "resident") {
        ASSERT_TRUE(plan.a_resident && plan.k_chunked()) << "the case should keep a K-chunked A panel resident";
        EXPECT_GE(plan.np / plan.tn / plan.cn, 2) << "the panel should serve several N tiles a core";
    }
    if (std::string(c.a_staging) == "chunks") {
        EXPECT_FALSE(plan.a_resident);
    }
    if (std::string(c.accumulator) == "double") {
        ASSERT_TRUE(plan.acc_ahead && !plan.k_chunked()) << "the case should run whole-K tiles with two accumulators";
        EXPECT_GE((plan.mp / plan.tm / plan.cm) * (plan.np / plan.tn / plan.cn), 2) << "two or more tiles a core";
    }
    if (std::string(c.b_staging) == "resident") {
        ASSERT_TRUE(plan.b_resident && plan.b_shared && plan.k_chunked()) << "the case should keep a whole-K B slice resident";
        EXPECT_EQ(plan.cm, scheduling_machine().cores) << "one chain over every core";
    }
    if (c.shared_weight_layout) {
        EXPECT_EQ(plan.bp, shared_weight_padded_n(MatmulShape{c.m, c.n, c.k, t}));
        EXPECT_GT(plan.bp, plan.np) << "the case should read B through a layout wider than its plan's N";
    } else {
        EXPECT_EQ(plan.bp, plan.np);
    }
    Halide::Buffer<> A_p = padded_copy(A, {plan.kp, plan.mp});
    Halide::Buffer<> B_p = padded_copy(B, {plan.bp, plan.kp});
    Halide::Buffer<> bias_p = padded_copy(bias, {plan.bp});
    Halide::Buffer<> spyre, host;
    if (c.residual) {
        Halide::Buffer<> R_p = padded_copy(R, {plan.np, plan.mp});
        spyre = run_generator("matmul", params, true, t, {c.n, c.m}, A_p, B_p, bias_p, R_p);
        host = run_generator("matmul", params, false, t, {c.n, c.m}, A, B, bias, R);
        // The host build itself against the one without R plus R (two roundings for
        // fp16, one ulp of the larger value at most): R is added, once, after the activation.
        std::map<std::string, std::string> plain = params;
        plain.erase("residual");
        Halide::Buffer<> without = run_generator("matmul", plain, false, t, {c.n, c.m}, A, B, bias);
        double worst = 0;
        for (int m = 0; m < c.m; m++) {
            for (int n = 0; n < c.n; n++) {
                const double h = value_at(host, n, m, 0), w = value_at(without, n, m, 0) + value_at(R, n, m, 0);
                worst = std::max(worst, std::fabs(h - w) / std::max(1.0, std::fabs(w)));
            }
        }
        EXPECT_LE(worst, t == Halide::Float(32) ? 1e-6 : 2e-3) << "the host build's C is not act(A.B + bias) + R";
    } else {
        spyre = run_generator("matmul", params, true, t, {c.n, c.m}, A_p, B_p, bias_p);
        host = run_generator("matmul", params, false, t, {c.n, c.m}, A, B, bias);
    }

    // fp32 accumulation in k order on both sides; the host may vectorize or fuse
    // differently, so allow rounding that grows with K; the transcendentals of the
    // epilogue are approximated differently on the host. fp16 outputs round once.
    const double ulp = t == Halide::Float(32) ? 1.2e-7 : 9.8e-4;
    const double tol = (t == Halide::Float(32) ? 4.0 * c.k * ulp : 2.0 * ulp) * std::sqrt((double)c.k) + 2e-6;
    double max_err = 0, max_ref = 0;
    int distinct = 0, positive = 0, negative = 0;
    const double first = value_at(host, 0, 0, 0);
    for (int m = 0; m < c.m; m++) {
        for (int n = 0; n < c.n; n++) {
            const double h = value_at(host, n, m, 0), s = value_at(spyre, n, m, 0);
            max_err = std::max(max_err, std::fabs(h - s) / std::max(1.0, std::fabs(h)));
            max_ref = std::max(max_ref, std::fabs(h));
            if (h != first) distinct++;
            if (h > 0) positive++;
            if (h < 0) negative++;
        }
    }
    if (c.m * c.n > 1) {
        EXPECT_GT(distinct, 0) << "the host reference is constant: the test could pass by accident";
        EXPECT_GT(max_ref, 0.1);
        EXPECT_GT(positive, 0);
        // relu clamps the negatives; the other activations keep some (gelu and silu dip below 0).
        if (std::string(c.activation) != "relu") {
            EXPECT_GT(negative, 0);
        }
    } else {
        EXPECT_NE(first, 0.0) << "the single output is zero: the test could pass by accident";
    }
    EXPECT_LE(max_err, tol) << "max relative error " << max_err;
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulDualRealization,
                         ::testing::Values(MatmulCase{64, 128, 256, "float32", "none"},
                                           MatmulCase{50, 70, 40, "float16", "none"},    // nothing a multiple of anything
                                           MatmulCase{33, 65, 17, "float32", "relu"},    // K below a stick
                                           MatmulCase{100, 36, 130, "float16", "relu"},  // ragged tiles
                                           MatmulCase{96, 192, 64, "float32", "gelu"},
                                           MatmulCase{37, 200, 300, "float16", "gelu"},  // K not a stick multiple
                                           MatmulCase{200, 40, 96, "float32", "silu"},   // M over several tiles
                                           MatmulCase{128, 256, 128, "float16", "silu"},
                                           MatmulCase{1, 1, 1, "float32", "gelu"},       // the smallest
                                           MatmulCase{300, 520, 2000, "float16", "relu"},  // several tiles and K chunks
                                           // An LM head's shape at small scale: n (the vocabulary) odd, not whole
                                           // sticks or tiles (Granite-3-8B: n=49155, k=4096), decode and a batch.
                                           MatmulCase{4, 1027, 256, "float16", "none"},
                                           MatmulCase{1, 1027, 256, "float16", "none"},
                                           MatmulCase{1, 4099, 512, "float16", "none"},
                                           MatmulCase{1, 49155, 4096, "float16", "none"},  // the LM head, decode
                                           // The fused residual (an output or down projection plus the residual stream).
                                           MatmulCase{50, 70, 40, "float16", "none", true},
                                           MatmulCase{33, 65, 17, "float32", "none", true},
                                           MatmulCase{37, 200, 300, "float16", "gelu", true},
                                           MatmulCase{96, 192, 64, "float32", "gelu", true},
                                           MatmulCase{100, 36, 130, "float16", "relu", true},
                                           MatmulCase{200, 40, 96, "float32", "silu", true},
                                           MatmulCase{1, 1, 1, "float16", "gelu", true},
                                           MatmulCase{300, 520, 2000, "float32", "none", true},  // several tiles and K chunks
                                           MatmulCase{1, 4096, 4096, "float16", "none", true},  // decode
                                           MatmulCase{1, 4096, 4096, "float32", "gelu", true},
                                           MatmulCase{512, 4096, 40, "float16", "gelu", true},  // a batch, small K
                                           MatmulCase{512, 4096, 4096, "float16", "none", true},  // a batch
                                           // One weight, one layout, at two M (apps/llm's prefill and decode).
                                           MatmulCase{64, 1000, 128, "float16", "none", false, true},
                                           MatmulCase{1, 1000, 128, "float16", "none", false, true},
                                           MatmulCase{8, 300, 70, "float32", "silu", true, true},
                                           // B chains gathered (b_forwarding=gathered): 4 cores along M
                                           // sharing B tiles of 64 rows; K chunks of 96 rows (24 a share),
                                           // N not whole tiles; fp16 with the residual, M ragged, K in
                                           // chunks of 384; 2-core chains, fp32.
                                           MatmulCase{256, 2048, 256, "float16", "none", false, false, 64, 256, "gathered"},
                                           MatmulCase{128, 520, 192, "float32", "gelu", false, false, 32, 64, "gathered"},
                                           MatmulCase{100, 520, 768, "float16", "none", true, false, 32, 64, "gathered"},
                                           MatmulCase{64, 1000, 512, "float32", "none", false, false, 32, 64, "gathered"},
                                           // B gathered round all 32 cores (8-row tiles, K in two chunks):
                                           // each core's second A chunk rides the rounds (gather_riders.h).
                                           MatmulCase{256, 64, 1024, "float16", "none", false, false, 8, 64, "gathered"},
                                           // A's whole-K panel resident (a_staging=resident): fp16 with the
                                           // residual, M and N ragged; fp32 gelu; with gathered B chains.
                                           MatmulCase{100, 1000, 768, "float16", "none", true, false, 32, 64, "auto", "resident"},
                                           MatmulCase{64, 520, 384, "float32", "gelu", false, false, 32, 64, "auto", "resident"},
                                           MatmulCase{256, 2048, 256, "float16", "none", false, false, 64, 128, "gathered", "resident"},
                                           // Two accumulators (accumulator=double), whole-K tiles: fp16 with
                                           // the residual and gelu, M and N ragged; fp32 relu with B chains
                                           // forwarded whole; fp16 silu, every tile on one core's row.
                                           MatmulCase{300, 1000, 200, "float16", "gelu", true, false, 32, 64, "auto", "auto", "double"},
                                           MatmulCase{256, 1000, 64, "float32", "relu", false, false, 32, 64, "whole", "auto", "double"},
                                           MatmulCase{72, 2100, 130, "float16", "silu", false, false, 40, 64, "auto", "auto", "double"},
                                           // A resident B slice (b_staging=resident), one chain of all the
                                           // cores, K in chunks: fp16 with the residual, M ragged over 32
                                           // row tiles, N and K not whole sticks; fp32 gelu, two N tiles a core.
                                           MatmulCase{250, 100, 1000, "float16", "none", true, false, 8, 0, "auto", "auto", "auto", "resident"},
                                           MatmulCase{256, 256, 384, "float32", "gelu", false, false, 8, 128, "auto", "auto", "auto", "resident"},
                                           // Whole-K tiles on 4 cores, A not shared, several N tiles a core:
                                           // each core's A panel and first matmul in row pieces (head
                                           // splitting, docs/compiler.md); fp16, then fp16 gelu with N ragged.
                                           MatmulCase{512, 512, 512, "float16", "none", false, false, 128, 128, "auto", "auto", "auto", "auto", 4},
                                           MatmulCase{512, 600, 200, "float16", "gelu", false, false, 128, 128, "auto", "auto", "auto", "auto", 4}),
                         case_name);

// activation=swiglu: B and the bias have 2 n columns, the gate's and the up projection's
// alternating in blocks of kSwigluBlock, and C(n, m) = silu(gate) * up. The host build is
// checked against the formula applied to the plain matmul of the same B (activation=none,
// 2 n columns), then the Spyre build against the host build.
struct SwigluCase {
    int m, n, k;
    const char *dtype;
    bool residual = false;
    bool shared_weight_layout = false;
    int tile_n = 0, max_cores = 0;  // forced knobs (0: the planner's)
};

class SwigluMatmulDualRealization : public ::testing::TestWithParam<SwigluCase> {};

TEST_P(SwigluMatmulDualRealization, SpyreMatchesHostAndTheFormula) {
    const SwigluCase c = GetParam();
    const Halide::Type t = std::string(c.dtype) == "float16" ? Halide::Float(16) : Halide::Float(32);
    const int acc_n = 2 * c.n;
    Halide::Buffer<> A = random_buffer("A", t, {c.k, c.m}, 31);
    Halide::Buffer<> B = random_buffer("B", t, {acc_n, c.k}, 32);
    Halide::Buffer<> bias = random_buffer("bias", t, {acc_n}, 33);
    Halide::Buffer<> R = random_buffer("R", t, {c.n, c.m}, 34);
    std::map<std::string, std::string> params = {{"m", std::to_string(c.m)}, {"n", std::to_string(c.n)},
                                                 {"k", std::to_string(c.k)}, {"dtype", c.dtype},
                                                 {"activation", "swiglu"}};
    if (c.residual) params["residual"] = "true";
    if (c.shared_weight_layout) params["shared_weight_layout"] = "true";
    if (c.tile_n) params["tile_n"] = std::to_string(c.tile_n);
    if (c.max_cores) params["max_cores"] = std::to_string(c.max_cores);
    MatmulSpyreOptions o;
    o.tile_n = c.tile_n, o.max_cores = c.max_cores;
    const MatmulShape shape{c.m, c.n, c.k, t, Activation::Swiglu, c.residual, c.shared_weight_layout};
    set_compiling_for_spyre(true);
    const MatmulSpyrePlan plan = plan_matmul_spyre(shape, o);
    const int weight_np = shared_weight_padded_n(shape);
    set_compiling_for_spyre(false);
    EXPECT_GE(plan.c_np, c.n);
    EXPECT_EQ(plan.tn % (2 * kSwigluBlock), 0) << "an accumulator tile of whole gate/up block pairs";
    if (c.tile_n) {
        EXPECT_EQ(plan.c_tn, (c.tile_n + kSwigluBlock - 1) / kSwigluBlock * kSwigluBlock);
    }
    if (c.shared_weight_layout) {
        EXPECT_EQ(plan.bp, weight_np) << "B padded as the plain product of its 2 n columns";
        EXPECT_EQ(plan.mp, (c.m + 7) / 8 * 8) << "the shared layout keeps M padded to PT passes only";
    }
    Halide::Buffer<> A_p = padded_copy(A, {plan.kp, plan.mp});
    Halide::Buffer<> B_p = padded_copy(B, {plan.bp, plan.kp});
    Halide::Buffer<> bias_p = padded_copy(bias, {plan.bp});
    Halide::Buffer<> spyre, host;
    if (c.residual) {
        spyre = run_generator("matmul", params, true, t, {c.n, c.m}, A_p, B_p, bias_p, padded_copy(R, {plan.c_np, plan.mp}));
        host = run_generator("matmul", params, false, t, {c.n, c.m}, A, B, bias, R);
    } else {
        spyre = run_generator("matmul", params, true, t, {c.n, c.m}, A_p, B_p, bias_p);
        host = run_generator("matmul", params, false, t, {c.n, c.m}, A, B, bias);
    }
    // The formula on the plain product (fp32 B columns of the same accumulation, rounded
    // to the dtype once there and once in the gated result: two roundings at most).
    std::map<std::string, std::string> plain = {{"m", std::to_string(c.m)}, {"n", std::to_string(acc_n)},
                                                {"k", std::to_string(c.k)}, {"dtype", "float32"}};
    Halide::Buffer<> A32 = random_buffer("A", Halide::Float(32), {c.k, c.m}, 31);
    for (int m = 0; m < c.m; m++) {
        for (int k = 0; k < c.k; k++) A32.as<float>()(k, m) = (float)value_at(A, k, m, 0);
    }
    Halide::Buffer<> B32 = random_buffer("B", Halide::Float(32), {acc_n, c.k}, 32);
    for (int k = 0; k < c.k; k++) {
        for (int j = 0; j < acc_n; j++) B32.as<float>()(j, k) = (float)value_at(B, j, k, 0);
    }
    Halide::Buffer<> bias32 = random_buffer("bias", Halide::Float(32), {acc_n}, 33);
    for (int j = 0; j < acc_n; j++) bias32.as<float>()(j) = (float)value_at(bias, j, 0, 0);
    Halide::Buffer<> gu = run_generator("matmul", plain, false, Halide::Float(32), {acc_n, c.m}, A32, B32, bias32);
    const double ulp = t == Halide::Float(32) ? 1.2e-7 : 9.8e-4;
    const double tol = (t == Halide::Float(32) ? 4.0 * c.k * ulp : 2.0 * ulp) * std::sqrt((double)c.k) + 2e-6;
    double host_err = 0, spyre_err = 0, max_ref = 0;
    int positive = 0, negative = 0;
    for (int m = 0; m < c.m; m++) {
        for (int n = 0; n < c.n; n++) {
            const int gate = n + kSwigluBlock * (n / kSwigluBlock), up = gate + kSwigluBlock;
            const double g = value_at(gu, gate, m, 0), u = value_at(gu, up, m, 0);
            const double want = g / (1.0 + std::exp(-g)) * u + (c.residual ? value_at(R, n, m, 0) : 0.0);
            const double h = value_at(host, n, m, 0), s = value_at(spyre, n, m, 0);
            host_err = std::max(host_err, std::fabs(h - want) / std::max(1.0, std::fabs(want)));
            spyre_err = std::max(spyre_err, std::fabs(s - h) / std::max(1.0, std::fabs(h)));
            max_ref = std::max(max_ref, std::fabs(want));
            positive += want > 0;
            negative += want < 0;
        }
    }
    EXPECT_GT(max_ref, 0.1);
    EXPECT_GT(positive, 0);
    EXPECT_GT(negative, 0);
    EXPECT_LE(host_err, 2 * tol + (t == Halide::Float(16) ? 2e-3 : 1e-5)) << "the host build is not silu(gate) * up";
    EXPECT_LE(spyre_err, tol) << "max relative error of the Spyre build against the host's " << spyre_err;
}

INSTANTIATE_TEST_SUITE_P(Shapes, SwigluMatmulDualRealization,
                         ::testing::Values(SwigluCase{50, 128, 40, "float16"},  // M and K not whole tiles or sticks
                                           SwigluCase{33, 192, 17, "float32"},  // K below a stick, an odd block count
                                           SwigluCase{100, 64, 130, "float16", true},  // one block, the residual
                                           SwigluCase{8, 320, 70, "float16", false, true},  // the shared weight layout
                                           SwigluCase{200, 192, 70, "float16", false, true},  // M not whole 64-row tiles
                                           SwigluCase{1, 640, 256, "float16", false, true},  // decode
                                           SwigluCase{16, 128, 4096, "float16"},  // K in chunks
                                           SwigluCase{32, 512, 128, "float32", true, false, 64, 2}),  // 4 N tiles a core
                         [](const ::testing::TestParamInfo<SwigluCase> &info) {
                             const SwigluCase &c = info.param;
                             return std::string(c.dtype) + "_m" + std::to_string(c.m) + "_n" + std::to_string(c.n) +
                                    "_k" + std::to_string(c.k) + (c.residual ? "_residual" : "") +
                                    (c.shared_weight_layout ? "_shared_weight_layout" : "") +
                                    (c.tile_n ? "_tile_n" + std::to_string(c.tile_n) : "") +
                                    (c.max_cores ? "_cores" + std::to_string(c.max_cores) : "");
                         });

// dtype=int8: int8 A and B, int32 bias, R and C, accumulated in int32 on the PT
// (pt.matmul with in_type i8). Integers are exact: the Spyre build must equal the
// host build bit for bit, over shapes that are not whole int8 sticks (128), tiles
// or core counts, K chunked, several cores, and sums that wrap around int32.
struct Int8MatmulCase {
    int m, n, k;
    const char *activation;
    bool residual = false;
    int max_cores = 0;    // 0: the machine's
    bool saturated = false;  // A and B all -128 and the bias near INT32_MAX: the sums wrap around
};

std::string int8_case_name(const ::testing::TestParamInfo<Int8MatmulCase> &info) {
    const Int8MatmulCase &c = info.param;
    return std::string(c.activation) + "_m" + std::to_string(c.m) + "_n" + std::to_string(c.n) + "_k" +
           std::to_string(c.k) + (c.residual ? "_residual" : "") +
           (c.max_cores ? "_cores" + std::to_string(c.max_cores) : "") + (c.saturated ? "_wrapping" : "");
}

class Int8MatmulDualRealization : public ::testing::TestWithParam<Int8MatmulCase> {};

TEST_P(Int8MatmulDualRealization, SpyreEqualsHostExactly) {
    const Int8MatmulCase c = GetParam();
    Halide::Buffer<> A = random_buffer("A", Halide::Int(8), {c.k, c.m}, 31);
    Halide::Buffer<> B = random_buffer("B", Halide::Int(8), {c.n, c.k}, 32);
    Halide::Buffer<> bias = random_buffer("bias", Halide::Int(32), {c.n}, 33);
    Halide::Buffer<> R = random_buffer("R", Halide::Int(32), {c.n, c.m}, 34);
    if (c.saturated) {
        A.as<int8_t>().fill(-128);
        B.as<int8_t>().fill(-128);
        bias.as<int32_t>().fill(std::numeric_limits<int32_t>::max() - 5);
    }
    std::map<std::string, std::string> params = {{"m", std::to_string(c.m)},
                                                 {"n", std::to_string(c.n)},
                                                 {"k", std::to_string(c.k)},
                                                 {"dtype", "int8"},
                                                 {"activation", c.activation}};
    if (c.residual) params["residual"] = "true";
    MatmulSpyreOptions o;
    if (c.max_cores) {
        params["max_cores"] = std::to_string(c.max_cores);
        o.max_cores = c.max_cores;
    }
    set_compiling_for_spyre(true);
    const MatmulSpyrePlan plan =
        plan_matmul_spyre(MatmulShape{c.m, c.n, c.k, Halide::Int(8), activation_of(c.activation), c.residual}, o);
    set_compiling_for_spyre(false);
    EXPECT_EQ(plan.in_lanes, 128) << "a stick holds 128 int8";
    EXPECT_EQ(plan.kp % 128, 0);
    EXPECT_EQ(plan.tn % 128, 0);
    Halide::Buffer<> A_p = padded_copy(A, {plan.kp, plan.mp});
    Halide::Buffer<> B_p = padded_copy(B, {plan.np, plan.kp});
    Halide::Buffer<> bias_p = padded_copy(bias, {plan.np});
    Halide::Buffer<> spyre, host;
    const Halide::Type out = Halide::Int(32);
    if (c.residual) {
        Halide::Buffer<> R_p = padded_copy(R, {plan.np, plan.mp});
        spyre = run_generator("matmul", params, true, out, {c.n, c.m}, A_p, B_p, bias_p, R_p);
        host = run_generator("matmul", params, false, out, {c.n, c.m}, A, B, bias, R);
    } else {
        spyre = run_generator("matmul", params, true, out, {c.n, c.m}, A_p, B_p, bias_p);
        host = run_generator("matmul", params, false, out, {c.n, c.m}, A, B, bias);
    }
    // The host build against a plain loop (int32 wrap-around done in uint32).
    const auto a = A.as<int8_t>(), b = B.as<int8_t>();
    const auto bi = bias.as<int32_t>(), r = R.as<int32_t>();
    int distinct = 0, positive = 0, negative = 0, large = 0;
    const int32_t first = host.as<int32_t>()(0, 0);
    for (int m = 0; m < c.m; m++) {
        for (int n = 0; n < c.n; n++) {
            uint32_t sum = (uint32_t)bi(n);
            for (int k = 0; k < c.k; k++) sum += (uint32_t)((int32_t)a(k, m) * (int32_t)b(n, k));
            int32_t expect = (int32_t)sum;
            if (std::string(c.activation) == "relu") expect = std::max(expect, 0);
            if (c.residual) expect = (int32_t)((uint32_t)expect + (uint32_t)r(n, m));
            const int32_t h = host.as<int32_t>()(n, m), s = spyre.as<int32_t>()(n, m);
            ASSERT_EQ(h, expect) << "host build at n=" << n << " m=" << m;
            ASSERT_EQ(s, h) << "Spyre build at n=" << n << " m=" << m;
            distinct += h != first;
            positive += h > 0;
            negative += h < 0;
            large += std::abs((int64_t)h) > 32767;  // outside int16: the accumulation is int32
        }
    }
    if (c.saturated) {
        // bias + k x 16384 is past INT32_MAX: the wrapped (negative) value.
        EXPECT_LT(first, 0) << "the sum did not wrap around";
        return;
    }
    if (c.m * c.n > 1) {
        EXPECT_GT(distinct, 0) << "the host reference is constant: the test could pass by accident";
        EXPECT_GT(positive, 0);
        if (std::string(c.activation) != "relu" || c.residual) {
            EXPECT_GT(negative, 0);
        }
    }
    EXPECT_GT(large, 0) << "no result outside int16: the test could pass with a narrower accumulator";
}

INSTANTIATE_TEST_SUITE_P(Shapes, Int8MatmulDualRealization,
                         ::testing::Values(Int8MatmulCase{64, 128, 256, "none"},
                                           Int8MatmulCase{50, 70, 40, "none"},     // nothing a multiple of anything
                                           Int8MatmulCase{33, 65, 17, "relu"},     // K below a stick
                                           Int8MatmulCase{100, 200, 300, "none"},  // ragged tiles, K not whole sticks
                                           Int8MatmulCase{300, 520, 2000, "relu"},  // several tiles and K chunks
                                           Int8MatmulCase{256, 1024, 512, "none", false, 8},   // 8 cores
                                           Int8MatmulCase{512, 2048, 1024, "none"},            // all the cores
                                           Int8MatmulCase{1, 1027, 256, "none"},               // decode, odd n
                                           Int8MatmulCase{1, 1, 1, "none"},
                                           Int8MatmulCase{37, 200, 300, "relu", true},  // with the residual
                                           Int8MatmulCase{16, 128, 256, "none", false, 0, true}),  // int32 wrap-around
                         int8_case_name);

// activation=swiglu needs whole 64-column blocks of C, and float operands.
TEST(MatmulParams, SwigluIsRefusedForPartialBlocksAndInt8) {
    const std::string partial = configure_error("matmul", {{"m", "8"}, {"n", "100"}, {"k", "64"}, {"activation", "swiglu"}});
    EXPECT_NE(partial.find("activation=swiglu needs n (C's columns, half of B's) to be a multiple of 64"), std::string::npos)
        << partial;
    EXPECT_NE(partial.find("not n=100"), std::string::npos) << partial;
    const std::string int8 =
        configure_error("matmul", {{"m", "8"}, {"n", "128"}, {"k", "128"}, {"activation", "swiglu"}, {"dtype", "int8"}});
    EXPECT_NE(int8.find("not gelu, silu or swiglu"), std::string::npos) << int8;
}

// A string knob takes one of its listed values (schedule_knobs.h checks every generator's).
TEST(MatmulParams, BForwardingOutsideItsValuesIsRefused) {
    for (const char *gen : {"matmul", "bmm"}) {
        const std::string msg = configure_error(gen, {{"m", "64"}, {"n", "64"}, {"k", "64"}, {"b_forwarding", "ring"}});
        EXPECT_NE(msg.find("knob b_forwarding=ring is not one of its values: auto, whole or gathered"), std::string::npos)
            << gen << ": " << msg;
        EXPECT_EQ(configure_error(gen, {{"m", "64"}, {"n", "64"}, {"k", "64"}, {"b_forwarding", "gathered"}}), "") << gen;
    }
}

// What the planner says when it refuses `o` for `shape` ("" when it plans it).
std::string planner_refusal(const MatmulShape &shape, const MatmulSpyreOptions &o) {
    std::string refused;
    set_compiling_for_spyre(true);
    try {
        (void)plan_matmul_spyre(shape, o);
    } catch (const Halide::CompileError &e) {
        refused = e.what();
    }
    set_compiling_for_spyre(false);
    return refused;
}

// a_staging takes auto, chunks or resident; resident where no plan can keep a panel is refused, saying why.
TEST(MatmulParams, AStagingResidentNeedsKChunksAndSeveralNTiles) {
    const std::string msg = configure_error("matmul", {{"m", "64"}, {"n", "64"}, {"k", "64"}, {"a_staging", "panel"}});
    EXPECT_NE(msg.find("knob a_staging=panel is not one of its values: auto, chunks or resident"), std::string::npos) << msg;
    MatmulSpyreOptions o;
    o.a_staging = "resident";
    const std::string refused = planner_refusal(MatmulShape{8, 64, 64, Halide::Float(16)}, o);  // one tile, whole K
    EXPECT_NE(refused.find("a_staging=resident, but no plan keeps A's whole-K panel resident"), std::string::npos) << refused;
    EXPECT_NE(refused.find("at least two N tiles and one row of tiles a core"), std::string::npos) << refused;
}

// accumulator takes auto, single or double; double where no plan has room for two
// accumulators or a second tile a core is refused, saying what it needs.
TEST(MatmulParams, TwoAccumulatorsNeedWholeKTilesAndASecondTile) {
    const std::string msg = configure_error("matmul", {{"m", "64"}, {"n", "64"}, {"k", "64"}, {"accumulator", "triple"}});
    EXPECT_NE(msg.find("knob accumulator=triple is not one of its values: auto, single or double"), std::string::npos) << msg;
    MatmulSpyreOptions o;
    o.accumulator = "double";
    const std::string refused = planner_refusal(MatmulShape{8, 64, 64, Halide::Float(16)}, o);  // one tile on any core
    EXPECT_NE(refused.find("accumulator=double, but no plan has room for two accumulators"), std::string::npos) << refused;
    EXPECT_NE(refused.find("two or more tiles a core"), std::string::npos) << refused;
}

// b_staging takes auto, chunks or resident; resident where no plan can keep a B slice is
// refused, saying what it needs (whole K here: one chunk).
TEST(MatmulParams, BStagingResidentNeedsKChunksAndOneChainOverTheCores) {
    const std::string msg = configure_error("matmul", {{"m", "64"}, {"n", "64"}, {"k", "64"}, {"b_staging", "slice"}});
    EXPECT_NE(msg.find("knob b_staging=slice is not one of its values: auto, chunks or resident"), std::string::npos) << msg;
    MatmulSpyreOptions o;
    o.b_staging = "resident";
    const std::string refused = planner_refusal(MatmulShape{2048, 2048, 64, Halide::Float(16)}, o);
    EXPECT_NE(refused.find("b_staging=resident, but no plan keeps a whole-K B slice resident"), std::string::npos) << refused;
    EXPECT_NE(refused.find("K in chunks"), std::string::npos) << refused;
}

// result takes auto, single or double; double where no plan has two result tiles (one N tile
// a core) is refused, saying what it needs.
TEST(MatmulParams, TwoResultTilesNeedAnEvenNumberOfNTilesACore) {
    const std::string msg = configure_error("matmul", {{"m", "64"}, {"n", "64"}, {"k", "64"}, {"result", "triple"}});
    EXPECT_NE(msg.find("knob result=triple is not one of its values: auto, single or double"), std::string::npos) << msg;
    MatmulSpyreOptions o;
    o.result = "double";
    const std::string refused = planner_refusal(MatmulShape{8, 64, 64, Halide::Float(16)}, o);  // one tile on any core
    EXPECT_NE(refused.find("result=double, but no plan has room for two result tiles"), std::string::npos) << refused;
    EXPECT_NE(refused.find("an even number of N tiles a core"), std::string::npos) << refused;
}

// row_scale=true: C = act(scale(m) * A.B + bias(n)) [+ R] with scale float32 (an RMSNorm
// folded into the projection after it). Spyre against host, and the host build against
// the formula in double where the activation is exact (none, relu): the bias joins after
// the scale, and the residual after the activation.
struct RowScaleCase {
    int m, n, k;
    const char *dtype;
    const char *activation;
    bool residual = false;
    bool shared_weight_layout = false;
};

class RowScaleMatmulDualRealization : public ::testing::TestWithParam<RowScaleCase> {};

TEST_P(RowScaleMatmulDualRealization, SpyreMatchesHostAndTheFormula) {
    const RowScaleCase c = GetParam();
    const Halide::Type t = std::string(c.dtype) == "float16" ? Halide::Float(16) : Halide::Float(32);
    const bool swiglu = std::string(c.activation) == "swiglu";
    const int acc_n = swiglu ? 2 * c.n : c.n;
    Halide::Buffer<> A = random_buffer("A", t, {c.k, c.m}, 31);
    Halide::Buffer<> B = random_buffer("B", t, {acc_n, c.k}, 32);
    Halide::Buffer<> bias = random_buffer("bias", t, {acc_n}, 33);
    Halide::Buffer<> R = random_buffer("R", t, {c.n, c.m}, 34);
    // Scales in [0.25, 4): rows differ by more than the tolerance.
    Halide::Buffer<float> scale(c.m, "scale");
    for (int m = 0; m < c.m; m++) scale(m) = 0.25f + 3.75f * (float)((m * 37 + 11) % 64) / 64.0f;
    std::map<std::string, std::string> params = {{"m", std::to_string(c.m)}, {"n", std::to_string(c.n)},
                                                 {"k", std::to_string(c.k)}, {"dtype", c.dtype},
                                                 {"activation", c.activation}, {"row_scale", "true"}};
    if (c.residual) params["residual"] = "true";
    if (c.shared_weight_layout) params["shared_weight_layout"] = "true";
    MatmulShape shape{c.m, c.n, c.k, t, swiglu ? Activation::Swiglu : activation_of(c.activation), c.residual,
                      c.shared_weight_layout, true};
    set_compiling_for_spyre(true);
    const MatmulSpyrePlan plan = plan_matmul_spyre(shape);
    set_compiling_for_spyre(false);
    Halide::Buffer<> A_p = padded_copy(A, {plan.kp, plan.mp});
    Halide::Buffer<> B_p = padded_copy(B, {plan.bp, plan.kp});
    Halide::Buffer<> bias_p = padded_copy(bias, {plan.bp});
    Halide::Buffer<> scale_p = padded_copy(Halide::Buffer<>(scale), {round_up(plan.mp, 32)});
    Halide::Buffer<> spyre, host;
    if (c.residual) {
        Halide::Buffer<> R_p = padded_copy(R, {plan.c_np, plan.mp});
        spyre = run_generator("matmul", params, true, t, {c.n, c.m}, A_p, B_p, bias_p, scale_p, R_p);
        host = run_generator("matmul", params, false, t, {c.n, c.m}, A, B, bias, Halide::Buffer<>(scale), R);
    } else {
        spyre = run_generator("matmul", params, true, t, {c.n, c.m}, A_p, B_p, bias_p, scale_p);
        host = run_generator("matmul", params, false, t, {c.n, c.m}, A, B, bias, Halide::Buffer<>(scale));
    }
    const double ulp = t == Halide::Float(32) ? 1.2e-7 : 9.8e-4;
    const double tol = (t == Halide::Float(32) ? 4.0 * c.k * ulp : 2.0 * ulp) * std::sqrt((double)c.k) * 4.0 + 2e-6;
    double max_err = 0, formula_err = 0;
    int distinct = 0;
    const bool exact_activation = std::string(c.activation) == "none" || std::string(c.activation) == "relu";
    for (int m = 0; m < c.m; m++) {
        for (int n = 0; n < c.n; n++) {
            const double h = value_at(host, n, m, 0), s = value_at(spyre, n, m, 0);
            max_err = std::max(max_err, std::fabs(h - s) / std::max(1.0, std::fabs(h)));
            if (h != value_at(host, 0, 0, 0)) distinct++;
            if (exact_activation) {
                double dot = 0;
                for (int k = 0; k < c.k; k++) dot += value_at(A, k, m, 0) * value_at(B, n, k, 0);
                double f = scale(m) * dot + value_at(bias, n, 0, 0);
                if (std::string(c.activation) == "relu") f = std::max(f, 0.0);
                if (c.residual) f += value_at(R, n, m, 0);
                formula_err = std::max(formula_err, std::fabs(h - f) / std::max(1.0, std::fabs(f)));
            }
        }
    }
    EXPECT_GT(distinct, 0) << "the host reference is constant: the test could pass by accident";
    EXPECT_LE(max_err, tol) << "Spyre against host: max relative error " << max_err;
    if (exact_activation) {
        EXPECT_LE(formula_err, tol) << "the host build is not act(scale A.B + bias) [+ R]";
    }
}

// int8 operands have int32 results, which a float row scale cannot scale: refused by name.
TEST(RowScaleMatmul, Int8IsACompileErrorNamingIt) {
    set_compiling_for_spyre(true);
    std::string msg;
    try {
        auto gen = Halide::Internal::GeneratorRegistry::create("matmul", Halide::GeneratorContext(Halide::Target("x86-64-linux")));
        Halide::Internal::GeneratorParamsMap pm = {{"dtype", "int8"}, {"row_scale", "true"}};
        gen->set_generator_param_values(pm);
        GeneratorSteps::configure(gen.get());
    } catch (const Halide::CompileError &e) {
        msg = e.what();
    }
    set_compiling_for_spyre(false);
    EXPECT_NE(msg.find("row_scale=true needs float operands"), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(Shapes, RowScaleMatmulDualRealization,
                         ::testing::Values(RowScaleCase{50, 70, 40, "float16", "none"},      // nothing a multiple of anything
                                           RowScaleCase{37, 200, 300, "float32", "relu", true},  // K chunks, residual
                                           RowScaleCase{40, 128, 96, "float16", "swiglu"},   // the gate of scaled columns
                                           RowScaleCase{1, 1000, 128, "float16", "none", false, true},  // decode, one row
                                           RowScaleCase{64, 1024, 512, "float16", "none", false, true}),  // a prefill's qkv, small
                         [](const auto &info) {
                             const RowScaleCase &c = info.param;
                             return std::string(c.dtype) + "_" + c.activation + "_m" + std::to_string(c.m) + "_n" +
                                    std::to_string(c.n) + "_k" + std::to_string(c.k) + (c.residual ? "_residual" : "") +
                                    (c.shared_weight_layout ? "_shared_weight_layout" : "");
                         });

}  // namespace
}  // namespace spyre::testing
