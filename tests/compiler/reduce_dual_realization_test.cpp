// gen_reduce built for Spyre against its host build on random data: sum, mean
// and max over every axis, both dtypes, over shapes that are not multiples of
// a stick, a tile or the core count, and reductions staged in several chunks.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "jit_helpers.h"
#include "reduce_schedule.h"

namespace spyre::testing {
namespace {

struct ReduceCase {
    const char *op;
    int axis;
    int d0, d1, d2;
    const char *dtype;
    bool split = false;  // the planner splits the reduced axis across the cores (small outputs)
    bool two_steps = false;  // axis 0, rows of whole sticks: reduced lane by lane over the sticks, then per row
};

std::string case_name(const ::testing::TestParamInfo<ReduceCase> &info) {
    const ReduceCase &c = info.param;
    return std::string(c.op) + "_axis" + std::to_string(c.axis) + "_" + c.dtype + "_" + std::to_string(c.d0) + "x" +
           std::to_string(c.d1) + "x" + std::to_string(c.d2);
}

class ReduceDualRealization : public ::testing::TestWithParam<ReduceCase> {};

TEST_P(ReduceDualRealization, SpyreMatchesHost) {
    const ReduceCase c = GetParam();
    const Halide::Type t = std::string(c.dtype) == "float16" ? Halide::Float(16) : Halide::Float(32);
    const ReduceShape shape{c.d0, c.d1, c.d2, t, c.op, c.axis};
    const std::map<std::string, std::string> params = {{"op", c.op},
                                                       {"axis", std::to_string(c.axis)},
                                                       {"d0", std::to_string(c.d0)},
                                                       {"d1", std::to_string(c.d1)},
                                                       {"d2", std::to_string(c.d2)},
                                                       {"dtype", c.dtype}};
    set_compiling_for_spyre(true);
    const ReduceSpyrePlan plan = plan_reduce_spyre(shape);
    set_compiling_for_spyre(false);
    EXPECT_EQ(plan.cores_r > 1, c.split) << "cores along the reduced axis: " << plan.cores_r;
    EXPECT_EQ(reduce_lane_steps(shape), c.two_steps) << "rows reduced in two steps";

    // max gets inputs in [-1, 0): zeros from the padding would win a max over padding.
    Halide::Buffer<> in = random_buffer("in", t, {c.d0, c.d1, c.d2}, 21);
    if (shape.op == "max") {
        if (t == Halide::Float(32)) in.as<float>().for_each_value([](float &v) { v = -0.5f * (v + 1.0f) - 1e-3f; });
        else in.as<Halide::float16_t>().for_each_value([](Halide::float16_t &v) {
            v = Halide::float16_t(-0.5f * ((float)v + 1.0f) - 1e-3f);
        });
    }
    std::vector<int> padded = {c.d0, c.d1, c.d2};
    padded[0] = (c.d0 + plan.in_lanes - 1) / plan.in_lanes * plan.in_lanes;
    padded[shape.kept(0)] = plan.u_padded;
    const std::vector<int> out_extents = {shape.extent(shape.kept(0)), shape.extent(shape.kept(1))};
    Halide::Buffer<> in_padded = padded_copy(in, padded);
    Halide::Buffer<> spyre = run_generator("reduce", params, true, t, out_extents, in_padded);
    Halide::Buffer<> host = run_generator("reduce", params, false, t, out_extents, in);

    // Both sides accumulate in fp32 in the same order; allow rounding growing with
    // the reduction length n (relative to max(1, |ref|)). fp16 outputs round once.
    const int n = shape.reduced();
    const double tol = (t == Halide::Float(32) ? 2.4e-7 * n : 2e-3) + 1e-6;
    // The formula itself, in double, over the true extents: the host build must be it (agreeing
    // with the Spyre build is not enough: both run the generator's algorithm).
    auto direct = [&](int u, int v) {
        double r = shape.op == "max" ? -INFINITY : 0.0;
        for (int k = 0; k < n; k++) {
            int at[3];
            at[shape.axis] = k, at[shape.kept(0)] = u, at[shape.kept(1)] = v;
            const double x = value_at(in, at[0], at[1], at[2]);
            r = shape.op == "max" ? std::max(r, x) : r + x;
        }
        return shape.op == "mean" ? r / n : r;
    };
    double max_err = 0, max_ref = 0, max_err_direct = 0;
    int distinct = 0;
    const double first = value_at(host, 0, 0, 0);
    for (int v = 0; v < out_extents[1]; v++)
        for (int u = 0; u < out_extents[0]; u++) {
            const double h = value_at(host, u, v, 0), s = value_at(spyre, u, v, 0);
            max_err = std::max(max_err, std::fabs(h - s) / std::max(1.0, std::fabs(h)));
            max_err_direct = std::max(max_err_direct, std::fabs(h - direct(u, v)) / std::max(1.0, std::fabs(h)));
            max_ref = std::max(max_ref, std::fabs(h));
            if (h != first) distinct++;
        }
    if (out_extents[0] * out_extents[1] > 1) {
        EXPECT_GT(distinct, 0) << "the host reference is constant: the test could pass by accident";
    }
    EXPECT_GT(max_ref, 1e-3) << "the host reference is (nearly) zero: the test could pass by accident";
    EXPECT_LE(max_err_direct, tol) << "the host build is not the reduction: max relative error " << max_err_direct;
    EXPECT_LE(max_err, tol) << "max relative error " << max_err << " (plan: tile " << plan.tile << ", chunk " << plan.chunk
                            << ", " << plan.cores() << " cores)";
}

INSTANTIATE_TEST_SUITE_P(Shapes, ReduceDualRealization,
                         ::testing::Values(ReduceCase{"sum", 0, 64, 32, 2, "float32", false, true},    // whole sticks
                                           ReduceCase{"sum", 0, 100, 37, 5, "float16"},   // ragged everything
                                           ReduceCase{"max", 0, 33, 70, 3, "float32"},    // max never sees the padding
                                           ReduceCase{"mean", 0, 1000, 9, 2, "float16"},
                                           ReduceCase{"max", 0, 1000, 9, 2, "float16"},
                                           ReduceCase{"sum", 1, 70, 50, 3, "float32"},
                                           ReduceCase{"max", 1, 100, 37, 5, "float16"},
                                           ReduceCase{"mean", 1, 129, 8000, 2, "float16", true}, // several chunks, split across cores
                                           ReduceCase{"sum", 2, 33, 7, 40, "float16"},
                                           ReduceCase{"max", 2, 65, 6, 11, "float32"},
                                           ReduceCase{"max", 2, 70, 5, 33, "float16"},
                                           ReduceCase{"mean", 2, 200, 20, 9, "float32"},
                                           ReduceCase{"sum", 1, 5, 1, 3, "float32"},       // reduce over one element
                                           ReduceCase{"max", 0, 1, 64, 1, "float32"},      // rows of one element
                                           // Small outputs: the reduced axis split across cores, combined on core 0.
                                           ReduceCase{"sum", 1, 64, 4096, 1, "float32", true},
                                           ReduceCase{"max", 1, 100, 2048, 2, "float16", true},
                                           ReduceCase{"mean", 2, 64, 3, 1024, "float16", true},
                                           // Rows of whole sticks, reduced in two steps (lane by lane over the
                                           // sticks, then one stick per row): a max, fp32 sums, and rows of 8192
                                           // fp16 staged a chunk of rows at a time.
                                           ReduceCase{"max", 0, 256, 40, 2, "float16", false, true},
                                           ReduceCase{"sum", 0, 96, 33, 2, "float32", false, true},
                                           ReduceCase{"mean", 0, 8192, 70, 1, "float16", false, true}),
                         case_name);

}  // namespace
}  // namespace spyre::testing
