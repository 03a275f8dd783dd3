// gen_elementwise built for Spyre against its host build on random data: every
// op (add, mul, gelu, silu), both dtypes, b broadcast along each dim and along
// several, over shapes that are not multiples of a stick, a tile or the core
// count, and rows longer than one SFU vector. op=swiglu (a twice as wide as
// out, gate then up) is also checked against a direct double-precision
// silu(gate) * up, on small shapes and on Granite-3-8B's MLP (F = 12800), and
// so is swiglu over alternating gate and up blocks (gate_up_blocks=true).
#include <gtest/gtest.h>

#include "elementwise_schedule.h"
#include "jit_helpers.h"

namespace spyre::testing {
namespace {

struct ElementwiseCase {
    const char *op;
    int d0, d1, d2;
    const char *dtype;
    const char *broadcast_b;  // "" or e.g. "d0,d2"
};

std::string case_name(const ::testing::TestParamInfo<ElementwiseCase> &info) {
    const ElementwiseCase &c = info.param;
    std::string b = c.broadcast_b;
    for (char &ch : b) {
        if (ch == ',') ch = '_';
    }
    return std::string(c.op) + "_" + c.dtype + "_" + std::to_string(c.d0) + "x" + std::to_string(c.d1) + "x" +
           std::to_string(c.d2) + (b.empty() ? "" : "_bcast_" + b);
}

void scale(Halide::Buffer<> &b, float k) {
    if (b.type() == Halide::Float(32)) b.as<float>().for_each_value([k](float &v) { v *= k; });
    else b.as<Halide::float16_t>().for_each_value([k](Halide::float16_t &v) { v = Halide::float16_t((float)v * k); });
}

class ElementwiseDualRealization : public ::testing::TestWithParam<ElementwiseCase> {};

TEST_P(ElementwiseDualRealization, SpyreMatchesHost) {
    const ElementwiseCase c = GetParam();
    const Halide::Type t = std::string(c.dtype) == "float16" ? Halide::Float(16) : Halide::Float(32);
    ElementwiseShape shape;
    shape.d0 = c.d0, shape.d1 = c.d1, shape.d2 = c.d2, shape.dtype = t, shape.op = c.op;
    const std::string bspec = c.broadcast_b;
    for (int d = 0; d < 3; d++) shape.broadcast_b[d] = bspec.find("d" + std::to_string(d)) != std::string::npos;
    const std::map<std::string, std::string> params = {{"op", c.op},           {"d0", std::to_string(c.d0)},
                                                       {"d1", std::to_string(c.d1)}, {"d2", std::to_string(c.d2)},
                                                       {"dtype", c.dtype},       {"broadcast_b", c.broadcast_b}};
    set_compiling_for_spyre(true);
    const ElementwiseSpyrePlan plan = plan_elementwise_spyre(shape);
    set_compiling_for_spyre(false);

    // The nonlinear ops get inputs in [-4, 4) so gelu and silu leave their linear range.
    const int a_d0 = shape.a_d0();
    Halide::Buffer<> a = random_buffer("a", t, {a_d0, c.d1, c.d2}, 11);
    if (!shape.binary()) scale(a, 4.0f);
    const std::vector<int> out_extents = {c.d0, c.d1, c.d2};
    Halide::Buffer<> spyre, host;
    if (shape.binary()) {
        const bool *bc = shape.broadcast_b;
        Halide::Buffer<> b = random_buffer("b", t, {bc[0] ? 1 : c.d0, bc[1] ? 1 : c.d1, bc[2] ? 1 : c.d2}, 12);
        Halide::Buffer<> a_padded = padded_copy(a, {plan.d0p, plan.d1p, c.d2});
        // A per-row b packed along the rows (plan.b_packed) is (1, d1p, .): its host order is its device order.
        Halide::Buffer<> b_padded =
            padded_copy(b, {bc[0] ? (plan.b_packed ? 1 : plan.lanes) : plan.d0p, bc[1] ? 1 : plan.d1p, bc[2] ? 1 : c.d2});
        spyre = run_generator("elementwise", params, true, t, out_extents, a_padded, b_padded);
        host = run_generator("elementwise", params, false, t, out_extents, a, b);
    } else {
        Halide::Buffer<> a_padded = padded_copy(a, {shape.gated() ? 2 * plan.d0p : plan.d0p, plan.d1p, c.d2});
        spyre = run_generator("elementwise", params, true, t, out_extents, a_padded);
        host = run_generator("elementwise", params, false, t, out_extents, a);
    }

    // add/mul: one fp32 operation; gelu/silu: tanh/exp approximated differently
    // on the host. fp16 results round once (half an ulp, 2^-11, plus a boundary case).
    const double tol = t == Halide::Float(32) ? (shape.binary() ? 1e-6 : 2e-5) : 2e-3;
    double max_err = 0, max_ref = 0, max_err_direct = 0;
    int distinct = 0, nonfinite = 0;
    const double first = value_at(host, 0, 0, 0);
    for (int z = 0; z < c.d2; z++)
        for (int y = 0; y < c.d1; y++)
            for (int x = 0; x < c.d0; x++) {
                const double h = value_at(host, x, y, z), s = value_at(spyre, x, y, z);
                max_err = std::max(max_err, std::fabs(h - s) / std::max(1.0, std::fabs(h)));
                nonfinite += !std::isfinite(h) || !std::isfinite(s);
                if (shape.gated()) {
                    const double g = value_at(a, x, y, z), u = value_at(a, x + c.d0, y, z);
                    const double direct = g / (1.0 + std::exp(-g)) * u;
                    max_err_direct = std::max(max_err_direct, std::fabs(h - direct) / std::max(1.0, std::fabs(direct)));
                }
                max_ref = std::max(max_ref, std::fabs(h));
                if (h != first) distinct++;
            }
    if (c.d0 * c.d1 * c.d2 > 1) {
        EXPECT_GT(distinct, 0) << "the host reference is constant: the test could pass by accident";
    }
    EXPECT_GT(max_ref, 0.05) << "the host reference is (nearly) zero: the test could pass by accident";
    EXPECT_EQ(nonfinite, 0) << "outputs that are not finite";
    EXPECT_LE(max_err_direct, t == Halide::Float(32) ? 2e-5 : 2e-3) << "the host build is not silu(gate) * up";
    EXPECT_LE(max_err, tol) << "max relative error " << max_err << " (plan: " << plan.tile_rows << " rows per tile, "
                            << plan.cores() << " cores, vector " << plan.row_vector << ")";
}

// A b broadcast along d0 alone (one value per row) is packed along the rows where every core's
// rows are whole sticks of values: it then moves a core's rows once, not a stick per row.
TEST(ElementwisePlan, PerRowBIsPackedWhereACoresRowsAreWholeSticks) {
    ScheduleContext::Use use(ScheduleContext::make(true));
    auto plan_of = [](int d0, int d1, int d2, Halide::Type t, const char *bc) {
        ElementwiseShape shape;
        shape.d0 = d0, shape.d1 = d1, shape.d2 = d2, shape.dtype = t, shape.op = "add";
        for (int d = 0; d < 3; d++) shape.broadcast_b[d] = std::string(bc).find("d" + std::to_string(d)) != std::string::npos;
        return plan_elementwise_spyre(shape);
    };
    const ElementwiseSpyrePlan packed = plan_of(512, 2048, 1, Halide::Float(16), "d0");
    EXPECT_TRUE(packed.b_packed);
    EXPECT_EQ((packed.d1p / packed.cores_d1) % packed.lanes, 0);
    EXPECT_TRUE(plan_of(100, 1024, 2, Halide::Float(32), "d0").b_packed);
    EXPECT_FALSE(plan_of(33, 70, 3, Halide::Float(32), "d0").b_packed) << "a core's rows are not whole sticks";
    EXPECT_FALSE(plan_of(512, 2048, 1, Halide::Float(16), "d1").b_packed) << "b is a row, not a value per row";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ElementwiseDualRealization,
    ::testing::Values(ElementwiseCase{"add", 64, 32, 2, "float32", ""},          // whole sticks and tiles
                      ElementwiseCase{"add", 100, 37, 5, "float16", ""},         // nothing a multiple of anything
                      ElementwiseCase{"mul", 33, 70, 3, "float32", "d0"},        // per-row scalar b
                      ElementwiseCase{"add", 1000, 7, 3, "float16", "d1"},       // b one row per z
                      ElementwiseCase{"mul", 129, 40, 6, "float16", "d2"},       // b one plane
                      ElementwiseCase{"add", 65, 33, 4, "float32", "d0,d2"},     // a column of b
                      ElementwiseCase{"mul", 70, 50, 2, "float16", "d1,d2"},     // one row of b
                      ElementwiseCase{"add", 5000, 3, 7, "float16", "d0,d1,d2"}, // scalar b; rows over 4096 lanes
                      ElementwiseCase{"mul", 1, 1, 1, "float32", ""},            // the smallest
                      ElementwiseCase{"mul", 100, 37, 5, "float16", "d0"},       // fp16 per-row scalar b
                      ElementwiseCase{"add", 512, 2048, 1, "float16", "d0"},     // per-row b packed along the rows
                      ElementwiseCase{"mul", 100, 1024, 2, "float32", "d0"},     // and fp32, two planes
                      ElementwiseCase{"relu", 200, 45, 3, "float32", ""},
                      ElementwiseCase{"relu", 100, 37, 5, "float16", ""},
                      ElementwiseCase{"gelu", 200, 45, 3, "float32", ""},
                      ElementwiseCase{"gelu", 100, 37, 5, "float16", ""},
                      ElementwiseCase{"gelu", 4100, 9, 1, "float16", ""},        // rows cut into SFU vectors
                      ElementwiseCase{"silu", 31, 100, 1, "float32", ""},
                      ElementwiseCase{"silu", 128, 65, 2, "float16", ""},
                      ElementwiseCase{"add", 4096, 1, 1, "float16", ""},    // Granite-3-8B residual adds:
                      ElementwiseCase{"add", 4096, 512, 1, "float16", ""},  // decode and a prefill
                      // swiglu: a = (2 d0, d1, d2), gate then up; d0 whole sticks for Spyre.
                      ElementwiseCase{"swiglu", 64, 37, 3, "float16", ""},
                      ElementwiseCase{"swiglu", 96, 20, 1, "float32", ""},
                      ElementwiseCase{"swiglu", 4160, 5, 1, "float16", ""},    // rows cut into SFU vectors
                      // Granite-3-8B's MLP gate (F = 12800): decode, small batches, a prefill.
                      ElementwiseCase{"swiglu", 12800, 1, 1, "float16", ""},
                      ElementwiseCase{"swiglu", 12800, 4, 1, "float16", ""},
                      ElementwiseCase{"swiglu", 12800, 8, 1, "float16", ""},
                      ElementwiseCase{"swiglu", 12800, 8, 1, "float32", ""},
                      ElementwiseCase{"swiglu", 12800, 512, 1, "float16", ""}),
    case_name);

// op=swiglu gate_up_blocks=true: a is (2 d0 d1, d2, 1), the gate's and the up
// projection's columns alternating in blocks of d0 along a's rows (gen_matmul
// activation=swiglu's B layout, as a decode step's gate/up product has them),
// and out(x, y, z) = silu(a(x + 2 d0 y, z)) * a(x + 2 d0 y + d0, z): the Spyre
// build against the host build, and the host build against that formula.
struct GateUpBlocksCase {
    int d0, d1, d2;
    const char *dtype;
};

class SwigluGateUpBlocks : public ::testing::TestWithParam<GateUpBlocksCase> {};

TEST_P(SwigluGateUpBlocks, SpyreMatchesHostAndTheFormula) {
    const GateUpBlocksCase c = GetParam();
    const Halide::Type t = std::string(c.dtype) == "float16" ? Halide::Float(16) : Halide::Float(32);
    ElementwiseShape shape;
    shape.d0 = c.d0, shape.d1 = c.d1, shape.d2 = c.d2, shape.dtype = t, shape.op = "swiglu", shape.gate_up_blocks = true;
    const std::map<std::string, std::string> params = {{"op", "swiglu"}, {"d0", std::to_string(c.d0)},
                                                       {"d1", std::to_string(c.d1)}, {"d2", std::to_string(c.d2)},
                                                       {"dtype", c.dtype}, {"gate_up_blocks", "true"}};
    set_compiling_for_spyre(true);
    const ElementwiseSpyrePlan plan = plan_elementwise_spyre(shape);
    set_compiling_for_spyre(false);
    const int row = 2 * c.d0 * c.d1;
    Halide::Buffer<> a = random_buffer("a", t, {row, c.d2, 1}, 13);
    scale(a, 4.0f);
    const std::vector<int> out_extents = {c.d0, c.d1, c.d2};
    Halide::Buffer<> spyre = run_generator("elementwise", params, true, t, out_extents,
                                           padded_copy(a, {2 * c.d0 * plan.d1p, c.d2, 1}));
    Halide::Buffer<> host = run_generator("elementwise", params, false, t, out_extents, a);
    double max_err = 0, max_err_direct = 0, max_ref = 0;
    for (int z = 0; z < c.d2; z++)
        for (int y = 0; y < c.d1; y++)
            for (int x = 0; x < c.d0; x++) {
                const double g = value_at(a, x + 2 * c.d0 * y, z, 0), u = value_at(a, x + 2 * c.d0 * y + c.d0, z, 0);
                const double direct = g / (1.0 + std::exp(-g)) * u;
                const double h = value_at(host, x, y, z), s = value_at(spyre, x, y, z);
                max_err = std::max(max_err, std::fabs(h - s) / std::max(1.0, std::fabs(h)));
                max_err_direct = std::max(max_err_direct, std::fabs(h - direct) / std::max(1.0, std::fabs(direct)));
                max_ref = std::max(max_ref, std::fabs(direct));
            }
    EXPECT_GT(max_ref, 0.05) << "the formula's result is (nearly) zero: the test could pass by accident";
    EXPECT_LE(max_err_direct, t == Halide::Float(32) ? 2e-5 : 2e-3) << "the host build is not silu(gate) * up over blocks";
    EXPECT_LE(max_err, t == Halide::Float(32) ? 2e-5 : 2e-3) << "max relative error " << max_err;
}

INSTANTIATE_TEST_SUITE_P(Shapes, SwigluGateUpBlocks,
                         ::testing::Values(GateUpBlocksCase{64, 20, 3, "float16"},  // a decode step's blocks, small
                                           GateUpBlocksCase{64, 37, 1, "float16"},  // block rows padded to tiles
                                           GateUpBlocksCase{32, 9, 2, "float32"}),  // fp32 blocks of one stick
                         [](const ::testing::TestParamInfo<GateUpBlocksCase> &info) {
                             const GateUpBlocksCase &c = info.param;
                             return std::string(c.dtype) + "_" + std::to_string(c.d0) + "x" + std::to_string(c.d1) + "x" +
                                    std::to_string(c.d2);
                         });

}  // namespace
}  // namespace spyre::testing

namespace spyre::testing {
namespace {

// op=swiglu with a gate width that is not whole sticks is refused for Spyre at configure() time.
TEST(ElementwiseParams, SpyreSwigluRefusesAGateThatIsNotWholeSticks) {
    std::string msg;
    set_compiling_for_spyre(true);
    try {
        auto gen = Halide::Internal::GeneratorRegistry::create("elementwise", Halide::GeneratorContext(Halide::Target("x86-64-linux")));
        Halide::Internal::GeneratorParamsMap pm = {{"op", "swiglu"}, {"d0", "100"}, {"d1", "4"}, {"d2", "1"}};
        gen->set_generator_param_values(pm);
        GeneratorSteps::configure(gen.get());
    } catch (const Halide::CompileError &e) {
        msg = e.what();
    }
    set_compiling_for_spyre(false);
    EXPECT_NE(msg.find("op=swiglu needs d0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("d0=100 is not"), std::string::npos) << msg;
}

// gate_up_blocks=true is swiglu's input layout only, and only in the default device order.
TEST(ElementwiseParams, GateUpBlocksIsRefusedOutsideSwigluAndTheDefaultOrder) {
    const std::string add = configure_error("elementwise", {{"op", "add"}, {"gate_up_blocks", "true"}});
    EXPECT_NE(add.find("gate_up_blocks=true is a layout of op=swiglu's input, not of op=add"), std::string::npos) << add;
    const std::string order = configure_error(
        "elementwise", {{"op", "swiglu"}, {"d0", "64"}, {"d1", "4"}, {"d2", "2"}, {"gate_up_blocks", "true"}, {"device_order", "yzx"}});
    EXPECT_NE(order.find("needs the default device_order (zyx), not yzx"), std::string::npos) << order;
}

}  // namespace
}  // namespace spyre::testing
