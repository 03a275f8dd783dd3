// A 3x3 box blur with boundary conditions, written as a user would write it
// (BoundaryConditions::repeat_edge / constant_exterior, or the same clamps and
// selects on the indices by hand), built for Spyre against the host build of
// the same generator on random non-constant data; the host build is checked
// against the formula with its boundary, so a wrong edge fails too. Boundaries
// that cannot compile are refused naming the Func, the loop and the fix.
// docs/scheduling.md, "Boundary conditions".
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "jit_helpers.h"
#include "spyre_schedule.h"

namespace {

using namespace Halide;

class UserBlur : public Generator<UserBlur> {
public:
    GeneratorParam<int> width{"width", 128};
    GeneratorParam<int> height{"height", 64};
    GeneratorParam<int> rows_per_core{"rows_per_core", 2};
    GeneratorParam<std::string> boundary{"boundary", "repeat_edge"};  // repeat_edge, zero, clamp, select, mirror
    GeneratorParam<bool> stage_input{"stage_input", false};  // stage input.in() and read the boundary inline
    GeneratorParam<int> tile_rows{"tile_rows", 0};             // > 0: tiles of that many rows inside each core
    GeneratorParam<bool> double_buffered{"double_buffered", false};  // the tiles' input double-buffered
    Input<Buffer<>> input{"blur_input", 2};    // float32 unless blur_input.type says float16
    Output<Buffer<>> output{"blur_output", 2};  // the input's type

    void generate() {
        const int W = width, H = height;
        const Type t = input.type();
        spyre::constrain_tensor(input, {W, H});
        const std::string b = boundary;
        if (b == "repeat_edge") {
            padded = BoundaryConditions::repeat_edge(input, {{0, W}, {0, H}});
        } else if (b == "zero") {
            padded = BoundaryConditions::constant_exterior(input, cast(t, 0.0f), {{0, W}, {0, H}});
        } else if (b == "clamp") {  // the same as repeat_edge, written by hand (no likely())
            padded(x, y) = input(clamp(x, 0, W - 1), clamp(y, 0, H - 1));
        } else if (b == "select") {  // zero padding by hand
            padded(x, y) = select(x >= 0 && x < W && y >= 0 && y < H, input(clamp(x, 0, W - 1), clamp(y, 0, H - 1)), cast(t, 0.0f));
        } else if (b == "mirror") {
            padded = BoundaryConditions::mirror_interior(input, {{0, W}, {0, H}});
        } else {
            _halide_user_assert(false) << "user_blur: boundary must be repeat_edge, zero, clamp, select or mirror, not '" << b << "'";
        }
        Expr s = cast(t, 0.0f);
        for (int dy = -1; dy <= 1; dy++)
            for (int dx = -1; dx <= 1; dx++) s += padded(x + dx, y + dy);
        blur(x, y) = s * cast(t, 1.0f / 9.0f);
        output(x, y) = blur(x, y);
        spyre::constrain_tensor(output, {W, H});
    }

    void schedule() {
        if (!spyre::is_spyre()) return;
        Var core("core"), yi("yi");
        output.split(y, core, yi, (int)rows_per_core, TailStrategy::RoundUp).parallel(core);
        spyre::stick_vectorize(output, x);
        VarOrRVar at = core;
        if (tile_rows > 0) {
            Var yo("yo"), yt("yt");
            output.split(yi, yo, yt, (int)tile_rows, TailStrategy::RoundUp);
            at = yo;
        }
        Func staged = stage_input ? input.in() : padded;
        if (double_buffered) spyre::double_buffer(staged, output, at);
        else spyre::stage_in_scratchpad(staged, output, at);
        spyre::stage_in_scratchpad(blur, output, at);
        spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("user_blur"));
    }

private:
    Var x{"x"}, y{"y"};
    Func padded{"padded"}, blur{"blur"};
};

// A causal mask built from the indices, as attention scores use it: keys x after the query y get -1e4.
class UserCausalMask : public Generator<UserCausalMask> {
public:
    GeneratorParam<int> n{"n", 64};
    Input<Buffer<float>> scores{"causal_scores", 2};
    Output<Buffer<float>> output{"blur_output", 2};

    void generate() {
        const int N = n;
        spyre::constrain_tensor(scores, {N, N});
        masked(x, y) = select(x <= y, scores(x, y), -1e4f);
        output(x, y) = masked(x, y);
        spyre::constrain_tensor(output, {N, N});
    }

    void schedule() {
        if (!spyre::is_spyre()) return;
        Var core("core"), yi("yi");
        const int rows = std::max(1, (int)n / 32);
        output.split(y, core, yi, rows, TailStrategy::RoundUp).parallel(core);
        spyre::stick_vectorize(output, x);
        spyre::stage_in_scratchpad(scores.in(), output, core);
        spyre::stage_in_scratchpad(masked, output, core);
        spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("user_causal_mask"));
    }

private:
    Var x{"x"}, y{"y"};
    Func masked{"masked"};
};

}  // namespace

HALIDE_REGISTER_GENERATOR(UserBlur, user_blur)
HALIDE_REGISTER_GENERATOR(UserCausalMask, user_causal_mask)

namespace spyre::testing {
namespace {

struct BlurCase {
    const char *boundary;
    int width, height, rows_per_core;
    int tile_rows = 0;             // > 0: tiles of that many rows inside each core (a serial loop)
    bool double_buffered = false;  // those tiles' boundary Func double-buffered
    bool float16 = false;          // the image in float16 (else float32)
};

std::string case_name(const ::testing::TestParamInfo<BlurCase> &info) {
    const BlurCase &c = info.param;
    return std::string(c.boundary) + "_" + std::to_string(c.width) + "x" + std::to_string(c.height) + "_rows" +
           std::to_string(c.rows_per_core) + (c.tile_rows ? "_tiles" + std::to_string(c.tile_rows) : "") +
           (c.double_buffered ? "_double_buffered" : "") + (c.float16 ? "_float16" : "");
}

std::map<std::string, std::string> params_of(const BlurCase &c) {
    return {{"width", std::to_string(c.width)},
            {"height", std::to_string(c.height)},
            {"rows_per_core", std::to_string(c.rows_per_core)},
            {"tile_rows", std::to_string(c.tile_rows)},
            {"double_buffered", c.double_buffered ? "true" : "false"},
            {"blur_input.type", c.float16 ? "float16" : "float32"},
            {"blur_output.type", c.float16 ? "float16" : "float32"},
            {"boundary", c.boundary}};
}

// The blur of `in` at (x, y) by the formula, with the case's boundary.
double formula(const Halide::Buffer<float> &in, const BlurCase &c, int x, int y) {
    const bool zero = std::string(c.boundary) == "zero" || std::string(c.boundary) == "select";
    double s = 0;
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
            const int xx = x + dx, yy = y + dy;
            const bool inside = xx >= 0 && xx < c.width && yy >= 0 && yy < c.height;
            if (zero && !inside) continue;
            s += in(std::clamp(xx, 0, c.width - 1), std::clamp(yy, 0, c.height - 1));
        }
    return s / 9.0;
}

class BlurDualRealization : public ::testing::TestWithParam<BlurCase> {};

// Element (x, y) of a float32 or float16 image, as a double.
double pixel(const Halide::Buffer<> &b, int x, int y) {
    if (b.type() == Halide::Float(16)) return (double)(float)b.as<Halide::float16_t>()(x, y);
    return b.as<float>()(x, y);
}

TEST_P(BlurDualRealization, SpyreMatchesHost) {
    const BlurCase c = GetParam();
    const Halide::Type t = c.float16 ? Halide::Float(16) : Halide::Float(32);
    Halide::Buffer<> in = random_buffer("blur_input", t, {c.width, c.height}, 41);
    Halide::Buffer<> host = run_generator("user_blur", params_of(c), false, t, {c.width, c.height}, in);
    Halide::Buffer<> spyre = run_generator("user_blur", params_of(c), true, t, {c.width, c.height}, in);
    spyre_kernel_stats stats{};
    ASSERT_EQ(spyre_get_last_run_stats(&stats), 0);
    Halide::Buffer<float> in_values(c.width, c.height);  // the formula's input, in float
    for (int y = 0; y < c.height; y++)
        for (int x = 0; x < c.width; x++) in_values(x, y) = (float)pixel(in, x, y);
    // Same additions in the same order on both sides (the SFU rounds each op as the host does);
    // float16 rounds each of the nine additions, so the formula is met only to float16's precision.
    const double formula_tolerance = c.float16 ? 1e-2 : 1e-5;
    double max_err = 0, max_ref_err = 0, max_ref = 0, edge_change = 0;
    for (int y = 0; y < c.height; y++)
        for (int x = 0; x < c.width; x++) {
            const double h = pixel(host, x, y), s = pixel(spyre, x, y);
            max_err = std::max(max_err, std::isfinite(s) ? std::fabs(h - s) : INFINITY);
            max_ref = std::max(max_ref, std::fabs(h));
            max_ref_err = std::max(max_ref_err, std::fabs(h - formula(in_values, c, x, y)));
            const bool edge = x == 0 || y == 0 || x == c.width - 1 || y == c.height - 1;
            // What the boundary contributes: the edge pixels against the blur of the interior taps only.
            if (edge) {
                BlurCase zero = c;
                zero.boundary = std::string(c.boundary) == "zero" || std::string(c.boundary) == "select" ? "repeat_edge" : "zero";
                edge_change = std::max(edge_change, std::fabs(h - formula(in_values, zero, x, y)));
            }
        }
    EXPECT_GT(max_ref, 0.1) << "the host reference is (nearly) zero: the test could pass by accident";
    EXPECT_GT(edge_change, 3 * formula_tolerance) << "the other boundary gives the same edges: the test does not exercise the boundary";
    EXPECT_LE(max_ref_err, formula_tolerance) << "the host build differs from the formula";
    EXPECT_LE(max_err, 1e-5) << "max abs error of the Spyre build";
    // The calibrated floor spyre-run reports: the image read once and written once at the calibrated DRAM rate.
    const spyre::MachineDescription &m = default_machine();
    const double image_bytes = (double)t.bytes() * c.width * c.height;
    const double floor_us = m.dram_cycles(image_bytes, image_bytes, (double)m.cores) / m.clock_ghz / 1000.0;
    std::cout << "[ figures  ] " << case_name({c, 0}) << ": simulated " << stats.simulated_us << " us, calibrated floor "
              << floor_us << " us (" << 100.0 * floor_us / std::max(stats.simulated_us, 1e-9) << "% of it), roofline bound "
              << stats.roofline_bound_us << " us (" << 100.0 * stats.roofline_bound_us / std::max(stats.simulated_us, 1e-9)
              << "% of it), DRAM " << stats.dram_read_bytes << " B read / " << stats.dram_write_bytes << " B written, "
              << "the algorithm's minimum " << (int64_t)image_bytes << " B each way, bottleneck " << stats.bottleneck << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Boundaries, BlurDualRealization,
    ::testing::Values(BlurCase{"repeat_edge", 128, 64, 2},    // 32 cores, 2 rows each
                      BlurCase{"zero", 128, 64, 2},           // BoundaryConditions::constant_exterior(input, 0)
                      BlurCase{"clamp", 128, 64, 2},          // clamp(x, 0, W - 1), clamp(y, 0, H - 1) by hand
                      BlurCase{"select", 128, 64, 2},         // select(inside, input(...), 0) by hand
                      BlurCase{"repeat_edge", 32, 8, 1},      // one stick wide: both edges in one tile row
                      BlurCase{"zero", 256, 96, 3},           // rows per core not a power of two
                      BlurCase{"repeat_edge", 1024, 256, 8},  // larger: the figures in docs/scheduling.md
                      BlurCase{"zero", 1024, 256, 8},
                      BlurCase{"select", 256, 96, 3},         // by hand, rows per core not a power of two
                      // Tiles of rows inside each core, each with its halo rows (a serial tile loop):
                      BlurCase{"repeat_edge", 128, 256, 8, 2},
                      BlurCase{"zero", 128, 256, 8, 4},
                      BlurCase{"clamp", 128, 256, 8, 2},
                      BlurCase{"select", 128, 256, 8, 4},
                      BlurCase{"repeat_edge", 128, 256, 8, 2, true},  // and double-buffered
                      BlurCase{"zero", 128, 256, 8, 4, true},
                      BlurCase{"zero", 256, 64, 2, 0, false, true},  // float16
                      // 4096 x 4096 float16: 128 rows per core in 64-row tiles, double-buffered (one
                      // tile per core would not fit the scratchpad); the figure in docs/scheduling.md.
                      BlurCase{"repeat_edge", 4096, 4096, 128, 64, true, true}),
    case_name);

// A select on the indices whose lanes differ inside a stick compiles to a mask the SFU fills.
TEST(IndexMaskDualRealization, ACausalMaskFromTheIndicesMatchesTheHost) {
    for (int n : {64, 96}) {
        Halide::Buffer<> in = random_buffer("causal_scores", Halide::Float(32), {n, n}, 9);
        const std::map<std::string, std::string> p = {{"n", std::to_string(n)}};
        Halide::Buffer<> host = run_generator("user_causal_mask", p, false, Halide::Float(32), {n, n}, in);
        Halide::Buffer<> spyre = run_generator("user_causal_mask", p, true, Halide::Float(32), {n, n}, in);
        int masked = 0, kept = 0, wrong = 0;
        for (int y = 0; y < n; y++)
            for (int x = 0; x < n; x++) {
                const float h = host.as<float>()(x, y), s = spyre.as<float>()(x, y);
                const float want = x <= y ? in.as<float>()(x, y) : -1e4f;
                wrong += h != want || s != h;
                (x <= y ? kept : masked)++;
            }
        EXPECT_GT(masked, 0);
        EXPECT_GT(kept, 0);
        EXPECT_EQ(wrong, 0) << "n=" << n;
    }
}

// The compile error of the blur case `c` on an input padded to `padded` (empty: not padded), or ""
// with a recorded failure when it compiles.
std::string blur_compile_error(const BlurCase &c, const std::vector<int> &padded) {
    Halide::Buffer<> in = random_buffer("blur_input", Halide::Float(32), {c.width, c.height}, 5);
    std::string message;
    try {
        const Halide::Buffer<> input = padded.empty() ? in : padded_copy(in, padded);
        run_generator("user_blur", params_of(c), true, Halide::Float(32), {c.width, c.height}, input);
        ADD_FAILURE() << "the " << c.boundary << " blur of width " << c.width << " compiled";
    } catch (const Halide::CompileError &e) {
        message = e.what();
    }
    set_compiling_for_spyre(false);
    return message;
}

// The edge of the stick dimension inside a stick: refused, naming the Func, the loop and the fix.
TEST(BlurBoundaryErrors, AnEdgeInsideAStickIsRefusedNamingTheFix) {
    const std::string m = blur_compile_error(BlurCase{"repeat_edge", 100, 64, 2}, {128, 64});
    EXPECT_NE(m.find("in Func 'repeat_edge'"), std::string::npos) << m;
    EXPECT_NE(m.find("in loop 'repeat_edge.s0._0._0'"), std::string::npos) << m;
    EXPECT_NE(m.find("inside a stick"), std::string::npos) << m;
    EXPECT_NE(m.find("whole number of sticks"), std::string::npos) << m;
}

TEST(BlurBoundaryErrors, AZeroPaddedEdgeInsideAStickIsRefusedNamingTheFix) {
    const std::string m = blur_compile_error(BlurCase{"zero", 100, 64, 2}, {128, 64});
    EXPECT_NE(m.find("in Func 'constant_exterior'"), std::string::npos) << m;
    EXPECT_NE(m.find("loop '"), std::string::npos) << m;
    EXPECT_NE(m.find("whole number of sticks"), std::string::npos) << m;
}

// mirror_interior's halo is the image reversed: refused, naming the Func and the supported boundaries.
TEST(BlurBoundaryErrors, AMirroredBoundaryIsRefusedNamingTheSupportedOnes) {
    const std::string m = blur_compile_error(BlurCase{"mirror", 128, 64, 2}, {});
    EXPECT_NE(m.find("in Func 'mirror_interior'"), std::string::npos) << m;
    EXPECT_NE(m.find("repeat_edge or constant_exterior"), std::string::npos) << m;
}

}  // namespace
}  // namespace spyre::testing

namespace spyre::testing {
namespace {

// The boundary read inline by the consumer of a staged input.in() (instead of staging the
// boundary Func) cannot compile; the error says so and names the fix, whether the boundary
// clamps the indices (repeat_edge, a hand-written clamp) or selects on them (constant_exterior,
// a hand-written select).
TEST(BlurBoundaryErrors, ABoundaryInlinedOverAStagedInputNamesTheBoundaryFuncToStage) {
    for (const char *b : {"repeat_edge", "clamp", "zero", "select"}) {
        auto p = params_of(BlurCase{b, 128, 64, 2});
        p["stage_input"] = "true";
        Halide::Buffer<> in = random_buffer("blur_input", Halide::Float(32), {128, 64}, 41);
        std::string m;
        try {
            run_generator("user_blur", p, true, Halide::Float(32), {128, 64}, in);
            ADD_FAILURE() << b << ": a boundary inlined over a staged input compiled";
        } catch (const Halide::CompileError &e) {
            m = e.what();
        }
        EXPECT_NE(m.find("in Func 'blur'"), std::string::npos) << b << ": " << m;
        EXPECT_NE(m.find("stage the Func that applies the boundary itself"), std::string::npos) << b << ": " << m;
        EXPECT_EQ(m.find("vectorize the stick dimension"), std::string::npos) << b << ": a fix that does not apply: " << m;
    }
}

}  // namespace
}  // namespace spyre::testing
