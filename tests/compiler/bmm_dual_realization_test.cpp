// gen_bmm built for Spyre against the host build of the same generator, on
// random non-constant data, over shapes that are not multiples of a stick,
// of a tile or of the core count, batch 1, K below a stick, both dtypes, and a
// B broadcast over the batch (broadcast_b=true: B(n, k), planned as one matmul),
// and B chains gathered (b_forwarding=gathered, batch 1 and a broadcast B).
#include <gtest/gtest.h>

#include "bmm_schedule.h"
#include "jit_helpers.h"

namespace spyre::testing {
namespace {

struct BmmCase {
    int batch, m, n, k;
    const char *dtype;
    bool broadcast_b = false;
    int tile_m = 0, tile_n = 0;         // forced knobs (0: the planner's)
    const char *b_forwarding = "auto";  // the b_forwarding knob
};

std::string case_name(const ::testing::TestParamInfo<BmmCase> &info) {
    const BmmCase &c = info.param;
    return std::string(c.dtype) + "_b" + std::to_string(c.batch) + "_m" + std::to_string(c.m) + "_n" +
           std::to_string(c.n) + "_k" + std::to_string(c.k) + (c.broadcast_b ? "_broadcast_b" : "") +
           (std::string(c.b_forwarding) != "auto" ? std::string("_b_") + c.b_forwarding : "");
}

class BmmDualRealization : public ::testing::TestWithParam<BmmCase> {};

TEST_P(BmmDualRealization, SpyreMatchesHost) {
    const BmmCase c = GetParam();
    const Halide::Type t = std::string(c.dtype) == "float16" ? Halide::Float(16) : Halide::Float(32);
    Halide::Buffer<> A = random_buffer("A", t, {c.k, c.m, c.batch}, 1);
    const std::vector<int> b_true = c.broadcast_b ? std::vector<int>{c.n, c.k} : std::vector<int>{c.n, c.k, c.batch};
    Halide::Buffer<> B = random_buffer("B", t, b_true, 2);
    std::map<std::string, std::string> params = {{"batch", std::to_string(c.batch)},
                                                 {"m", std::to_string(c.m)},
                                                 {"n", std::to_string(c.n)},
                                                 {"k", std::to_string(c.k)},
                                                 {"dtype", c.dtype},
                                                 {"broadcast_b", c.broadcast_b ? "true" : "false"},
                                                 {"b_forwarding", c.b_forwarding}};
    if (c.tile_m) params["tile_m"] = std::to_string(c.tile_m);
    if (c.tile_n) params["tile_n"] = std::to_string(c.tile_n);
    BmmSpyreOptions o;
    o.tile_m = c.tile_m, o.tile_n = c.tile_n, o.b_forwarding = c.b_forwarding;
    set_compiling_for_spyre(true);
    const BmmSpyrePlan plan = plan_bmm_spyre(BmmShape{c.batch, c.m, c.n, c.k, t, c.broadcast_b}, o);
    set_compiling_for_spyre(false);
    if (std::string(c.b_forwarding) == "gathered") {
        ASSERT_TRUE(plan.b_shared && plan.b_gathered) << "the case should run a gathered B chain";
    }
    Halide::Buffer<> A_padded = padded_copy(A, {plan.kp, plan.mp, c.batch});
    Halide::Buffer<> B_padded =
        padded_copy(B, c.broadcast_b ? std::vector<int>{plan.np, plan.kp} : std::vector<int>{plan.np, plan.kp, c.batch});
    Halide::Buffer<> spyre = run_generator("bmm", params, true, t, {c.n, c.m, c.batch}, A_padded, B_padded);
    Halide::Buffer<> host = run_generator("bmm", params, false, t, {c.n, c.m, c.batch}, A, B);

    // fp32 accumulation in k order on both sides; the host may vectorize or
    // fuse differently, so allow rounding that grows with K. fp16 outputs round once.
    const double ulp = t == Halide::Float(32) ? 1.2e-7 : 9.8e-4;
    const double tol = (t == Halide::Float(32) ? 4.0 * c.k * ulp : 2.0 * ulp) * std::sqrt((double)c.k) + 1e-6;
    double max_err = 0, max_ref = 0;
    int distinct = 0;
    const double first = value_at(host, 0, 0, 0);
    for (int b = 0; b < c.batch; b++)
        for (int m = 0; m < c.m; m++)
            for (int n = 0; n < c.n; n++) {
                const double h = value_at(host, n, m, b), s = value_at(spyre, n, m, b);
                max_err = std::max(max_err, std::fabs(h - s) / std::max(1.0, std::fabs(h)));
                max_ref = std::max(max_ref, std::fabs(h));
                if (h != first) distinct++;
            }
    if (c.batch * c.m * c.n > 1) {
        EXPECT_GT(distinct, 0) << "the host reference is constant: the test could pass by accident";
        EXPECT_GT(max_ref, 0.1);
    } else {
        EXPECT_NE(first, 0.0) << "the single output is zero: the test could pass by accident";
    }
    EXPECT_LE(max_err, tol) << "max relative error " << max_err;
}

INSTANTIATE_TEST_SUITE_P(Shapes, BmmDualRealization,
                         ::testing::Values(BmmCase{2, 64, 128, 256, "float32"},  // the README contract
                                           BmmCase{1, 64, 64, 64, "float16"},    // batch 1
                                           BmmCase{2, 50, 70, 40, "float32"},    // nothing a multiple of anything
                                           BmmCase{3, 33, 65, 17, "float16"},    // K below a stick
                                           BmmCase{1, 1, 1, 1, "float32"},       // the smallest
                                           BmmCase{5, 100, 36, 130, "float16"},  // odd batch, ragged tiles
                                           BmmCase{8, 96, 192, 64, "float32"},   // more tiles than cores
                                           BmmCase{2, 128, 256, 300, "float16"}, // K not a stick multiple
                                           BmmCase{1, 200, 40, 96, "float32"},   // M over several tiles
                                           // One B for every batch: M tiles padded per batch, cores along the batch.
                                           BmmCase{4, 64, 128, 256, "float32", true},
                                           BmmCase{3, 100, 70, 40, "float16", true},
                                           BmmCase{2, 33, 65, 17, "float16", true},
                                           // B chains gathered: batch 1 on 4 x 8 cores; a broadcast B whose
                                           // chain spans the 4 batches' cores, N not whole tiles, and one over
                                           // 2 batches x 2 row tiles with M ragged.
                                           BmmCase{1, 256, 2048, 256, "float16", false, 64, 256, "gathered"},
                                           BmmCase{4, 64, 500, 768, "float32", true, 64, 64, "gathered"},
                                           BmmCase{2, 50, 500, 768, "float32", true, 32, 64, "gathered"},
                                           // Planned as a matmul with whole K: A staged once per row of tiles
                                           // for the core's several N tiles; and a broadcast B gathered round
                                           // all 32 cores (2 batches x 16 row tiles of 16 rows).
                                           BmmCase{2, 64, 2048, 128, "float16", true, 32, 64},
                                           BmmCase{2, 256, 256, 1024, "float16", true, 16, 64, "gathered"}),
                         case_name);

}  // namespace
}  // namespace spyre::testing
