// Loop indices used as values and masks that move with a serial loop inside a
// core (selection/index_tables.h): an index in SFU arithmetic reads a table of
// consecutive integers filled once per core, so `f32(x)`, `f32(y)` and a causal
// mask `select(x <= y, ...)` under a tile loop compile and match the host build.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "jit_helpers.h"
#include "spyre_schedule.h"

namespace {

using namespace Halide;

// out(x, y) = in(x, y) + 0.5 x - 0.25 y: the vectorized index as a vector, the row index as a scalar.
class IndexAsValue : public Generator<IndexAsValue> {
public:
    GeneratorParam<int> width{"width", 128};
    GeneratorParam<int> height{"height", 64};
    GeneratorParam<int> tile_rows{"tile_rows", 0};  // 0: one tile per core
    Input<Buffer<float>> input{"index_value_in", 2};
    Output<Buffer<float>> output{"index_value_out", 2};

    void generate() {
        spyre::constrain_tensor(input, {(int)width, (int)height});
        shifted(x, y) = input(x, y) + cast<float>(x) * 0.5f - cast<float>(y) * 0.25f;
        output(x, y) = shifted(x, y);
        spyre::constrain_tensor(output, {(int)width, (int)height});
    }

    void schedule() {
        if (!spyre::is_spyre()) return;
        Var core("core"), yi("yi"), yo("yo"), yt("yt");
        const int rows = std::max(1, (int)height / 32);
        output.split(y, core, yi, rows, TailStrategy::RoundUp).parallel(core);
        spyre::stick_vectorize(output, x);
        if (tile_rows > 0) {
            output.split(yi, yo, yt, tile_rows, TailStrategy::RoundUp);
            spyre::stage_in_scratchpad(input.in(), output, yo);
            spyre::stage_in_scratchpad(shifted, output, yo);
        } else {
            spyre::stage_in_scratchpad(input.in(), output, core);
            spyre::stage_in_scratchpad(shifted, output, core);
        }
        spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("index_as_value"));
    }

private:
    Var x{"x"}, y{"y"};
    Func shifted{"shifted"};
};

// A causal mask under a serial tile loop: keys x after the query y get -1e4.
class TiledCausalMask : public Generator<TiledCausalMask> {
public:
    GeneratorParam<int> n{"n", 128};
    GeneratorParam<int> tile_rows{"tile_rows", 2};
    GeneratorParam<bool> whole_rows{"whole_rows", false};  // bound the staged scores to whole rows
    Input<Buffer<float>> scores{"tiled_causal_scores", 2};
    Output<Buffer<float>> output{"tiled_causal_out", 2};

    void generate() {
        const int N = n;
        spyre::constrain_tensor(scores, {N, N});
        masked(x, y) = select(x <= y, scores(x, y), -1e4f);
        output(x, y) = masked(x, y);
        spyre::constrain_tensor(output, {N, N});
    }

    void schedule() {
        if (!spyre::is_spyre()) return;
        Var core("core"), yi("yi"), yo("yo"), yt("yt");
        const int rows = std::max(1, (int)n / 32);
        output.split(y, core, yi, rows, TailStrategy::RoundUp).parallel(core);
        output.split(yi, yo, yt, tile_rows, TailStrategy::RoundUp);
        spyre::stick_vectorize(output, x);
        // Halide trims the box of `scores` under the select to the keys the tile's rows keep (x <= y),
        // a box that grows with yo: the backend splits yo where it changes. Bounded to whole rows,
        // the box is the same for every tile (one run, more bytes read).
        Func staged = scores.in();
        if (whole_rows) staged.bound(staged.args()[0], 0, (int)n);
        spyre::stage_in_scratchpad(staged, output, yo);
        spyre::stage_in_scratchpad(masked, output, yo);
        spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("tiled_causal_mask"));
    }

private:
    Var x{"x"}, y{"y"};
    Func masked{"masked"};
};

// The first row index of each column's maximum, as two reductions over the rows (the reduction
// is along the rows, so both updates are SFU vectors over the columns with the row index a scalar).
class ColumnArgmax : public Generator<ColumnArgmax> {
public:
    GeneratorParam<int> width{"width", 1024};
    GeneratorParam<int> height{"height", 40};
    GeneratorParam<bool> inline_reductions{"inline_reductions", false};  // maximum() / minimum()
    GeneratorParam<bool> halide_argmax{"halide_argmax", false};          // Halide's argmax(), a Tuple
    Input<Buffer<float>> input{"column_argmax_in", 2};
    Output<Buffer<int>> output{"column_argmax_out", 1};

    void generate() {
        spyre::constrain_tensor(input, {(int)width, (int)height});
        RDom r(0, input.height(), "r");
        if (halide_argmax) {
            first(x) = argmax(input(x, r))[0];
        } else if (inline_reductions) {
            best(x) = maximum(input(x, r));
            first(x) = minimum(select(input(x, r) == best(x), r, input.height()));
        } else {
            best(x) = Float(32).min();
            best(x) = max(best(x), input(x, r));
            first(x) = input.height();
            first(x) = min(first(x), select(input(x, r) == best(x), r, input.height()));
        }
        output(x) = first(x);
        spyre::constrain_tensor(output, {(int)width});
    }

    void schedule() {
        if (!spyre::is_spyre()) return;
        Var core("core"), xi("xi");
        output.split(x, core, xi, (int)width / 32, TailStrategy::RoundUp).parallel(core);
        spyre::stick_vectorize(output, xi);
        spyre::stage_in_scratchpad(input.in(), output, core);
        if (halide_argmax) {
            spyre::stage_in_scratchpad(first, output, core);  // with the argmax Func it calls
            spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("column_argmax"));
            return;
        }
        for (Func f : {best, first}) {
            if (inline_reductions) {
                spyre::stage_in_scratchpad(f, output, core);  // with the reduction Func it calls
                continue;
            }
            spyre::accumulate_in_scratchpad(f, output, core);
            spyre::stick_vectorize(f, 0, x);
        }
        spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("column_argmax"));
    }

private:
    Var x{"x"};
    Func best{"best"}, first{"first"};
};

// The first column index of each row's maximum: the maximum along the stick (sfu.rowmax), the
// matching indices as a staged Func, and their minimum along the stick.
class RowArgmax : public Generator<RowArgmax> {
public:
    GeneratorParam<int> width{"width", 1000};
    GeneratorParam<int> height{"height", 64};
    GeneratorParam<bool> inline_reductions{"inline_reductions", false};  // maximum() / minimum()
    GeneratorParam<bool> halide_argmax{"halide_argmax", false};          // Halide's argmax(), a Tuple
    Input<Buffer<float>> input{"row_argmax_in", 2};
    Output<Buffer<int>> output{"row_argmax_out", 1};

    void generate() {
        spyre::constrain_tensor(input, {(int)width, (int)height});
        RDom r(0, input.width(), "r");
        if (halide_argmax) {
            result(y) = argmax(input(r, y))[0];
            output(y) = result(y);
            spyre::constrain_tensor(output, {(int)height});
            return;
        }
        if (inline_reductions) {
            best(y) = maximum(input(r, y));
        } else {
            best(y) = Float(32).min();
            best(y) = max(best(y), input(r, y));
        }
        hits(x, y) = select(input(x, y) == best(y), x, input.width());
        if (inline_reductions) {
            first(y) = minimum(hits(r, y));
        } else {
            first(y) = input.width();
            first(y) = min(first(y), hits(r, y));
        }
        result(y) = first(y);
        output(y) = result(y);
        spyre::constrain_tensor(output, {(int)height});
    }

    void schedule() {
        if (!spyre::is_spyre()) return;
        Var core("core"), yi("yi");
        output.split(y, core, yi, 32, TailStrategy::RoundUp).parallel(core);
        spyre::stick_vectorize(output, yi);
        if (halide_argmax) {
            // With the argmax Func it calls: a Tuple reduced along the stick, one element at a time.
            spyre::stage_in_scratchpad(result, output, core);
            spyre::stage_in_scratchpad(input.in(), output, core);
            spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("row_argmax"));
            return;
        }
        result.compute_at(output, core).store_in(MemoryType::VTCM).vectorize(y, 32, TailStrategy::RoundUp);
        if (inline_reductions) {
            // Each with the reduction Func it calls, which reduces along the stick: one per row.
            spyre::stage_in_scratchpad(best, output, core);
            spyre::stage_in_scratchpad(first, output, core);
        } else {
            best.compute_at(output, core).store_in(MemoryType::VTCM);
            first.compute_at(output, core).store_in(MemoryType::VTCM);
        }
        hits.compute_at(output, core).store_in(MemoryType::VTCM).vectorize(x, 32, TailStrategy::RoundUp);
        spyre::stage_in_scratchpad(input.in(), output, core);
        spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("row_argmax"));
    }

private:
    Var x{"x"}, y{"y"};
    Func best{"best"}, hits{"hits"}, first{"first"}, result{"result"};
};

// The minimum of each row along the stick, for int8 and float32: sfu.rowmax of the row under an
// order-reversing map (~v for integers, which never overflows, -v for floats), mapped back.
class RowMin : public Generator<RowMin> {
public:
    GeneratorParam<int> width{"width", 256};
    GeneratorParam<int> height{"height", 256};
    Input<Buffer<>> input{"row_min_in", 2};
    Output<Buffer<>> output{"row_min_out", 1};

    void generate() {
        spyre::constrain_tensor(input, {(int)width, (int)height});
        RDom r(0, input.width(), "r");
        row_min(y) = input.type().max();
        row_min(y) = min(row_min(y), input(r, y));
        result(y) = row_min(y);
        output(y) = result(y);
        spyre::constrain_tensor(output, {(int)height});
    }

    void schedule() {
        if (!spyre::is_spyre()) return;
        const int lanes = spyre::stick_lanes(input.type());
        Var core("core"), yi("yi");
        output.split(y, core, yi, lanes, TailStrategy::RoundUp).parallel(core);
        spyre::stick_vectorize(output, yi);
        result.compute_at(output, core).store_in(MemoryType::VTCM).vectorize(y, lanes, TailStrategy::RoundUp);
        row_min.compute_at(output, core).store_in(MemoryType::VTCM);
        spyre::stage_in_scratchpad(input.in(), output, core);
        spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("row_min"));
    }

private:
    Var y{"y"};
    Func row_min{"row_min"}, result{"result"};
};

}  // namespace

HALIDE_REGISTER_GENERATOR(IndexAsValue, index_as_value)
HALIDE_REGISTER_GENERATOR(TiledCausalMask, tiled_causal_mask)
HALIDE_REGISTER_GENERATOR(ColumnArgmax, column_argmax)
HALIDE_REGISTER_GENERATOR(RowArgmax, row_argmax)
HALIDE_REGISTER_GENERATOR(RowMin, row_min)

namespace spyre::testing {
namespace {

struct IndexCase {
    int width, height, tile_rows;
};

class IndexAsValueDualRealization : public ::testing::TestWithParam<IndexCase> {};

TEST_P(IndexAsValueDualRealization, MatchesTheHostAndTheFormula) {
    const IndexCase c = GetParam();
    Halide::Buffer<> in = random_buffer("index_value_in", Halide::Float(32), {c.width, c.height}, 3);
    const std::map<std::string, std::string> p = {{"width", std::to_string(c.width)},
                                                  {"height", std::to_string(c.height)},
                                                  {"tile_rows", std::to_string(c.tile_rows)}};
    Halide::Buffer<> host = run_generator("index_as_value", p, false, Halide::Float(32), {c.width, c.height}, in);
    Halide::Buffer<> spyre = run_generator("index_as_value", p, true, Halide::Float(32), {c.width, c.height},
                                           padded_copy(in, {(c.width + 31) / 32 * 32, c.height}));
    int wrong = 0;
    for (int y = 0; y < c.height; y++)
        for (int x = 0; x < c.width; x++) {
            const float want = in.as<float>()(x, y) + x * 0.5f - y * 0.25f;
            const float h = host.as<float>()(x, y), s = spyre.as<float>()(x, y);
            if (std::fabs(h - want) > 1e-4f * (1 + std::fabs(want)) || s != h) {
                if (wrong++ < 4) ADD_FAILURE() << "at (" << x << ", " << y << "): spyre " << s << ", host " << h;
            }
        }
    EXPECT_EQ(wrong, 0);
}

INSTANTIATE_TEST_SUITE_P(Shapes, IndexAsValueDualRealization,
                         ::testing::Values(IndexCase{128, 64, 0},   // one tile per core
                                           IndexCase{100, 64, 0}, IndexCase{128, 128, 2},
                                           IndexCase{100, 128, 2},  // a serial tile loop, width not whole sticks
                                           IndexCase{64, 256, 4}),
                         [](const ::testing::TestParamInfo<IndexCase> &i) {
                             return "w" + std::to_string(i.param.width) + "_h" + std::to_string(i.param.height) +
                                    "_tile" + std::to_string(i.param.tile_rows);
                         });

TEST(IndexMaskDualRealization, ACausalMaskUnderASerialTileLoopMatchesTheHost) {
    for (const auto &[n, whole_rows] : std::vector<std::pair<int, bool>>{{128, false}, {192, false}, {128, true}}) {
        Halide::Buffer<> in = random_buffer("tiled_causal_scores", Halide::Float(32), {n, n}, 11);
        const std::map<std::string, std::string> p = {
            {"n", std::to_string(n)}, {"tile_rows", "2"}, {"whole_rows", whole_rows ? "true" : "false"}};
        Halide::Buffer<> host = run_generator("tiled_causal_mask", p, false, Halide::Float(32), {n, n}, in);
        Halide::Buffer<> spyre = run_generator("tiled_causal_mask", p, true, Halide::Float(32), {n, n}, in);
        int wrong = 0;
        for (int y = 0; y < n; y++)
            for (int x = 0; x < n; x++) {
                const float want = x <= y ? in.as<float>()(x, y) : -1e4f;
                const float h = host.as<float>()(x, y), s = spyre.as<float>()(x, y);
                if (h != want || s != h) {
                    if (wrong++ < 4) ADD_FAILURE() << "n=" << n << " at (" << x << ", " << y << "): spyre " << s;
                }
            }
        EXPECT_EQ(wrong, 0) << "n=" << n;
    }
}

// Inputs with repeated maxima (values on a coarse grid), so "the first index" is what is tested.
Halide::Buffer<> coarse_input(const std::string &name, int w, int h, int seed) {
    Halide::Buffer<float> b(w, h);
    b.set_name(name);
    uint32_t s = seed;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            s = s * 1664525u + 1013904223u;
            b(x, y) = (float)((s >> 16) % 7) - 3.0f;
        }
    return b;
}

// How the argmax is written: two explicit updates, two inline reductions (maximum(), minimum()),
// or Halide's argmax() (a Tuple of the index and the value).
enum class ArgmaxForm { ExplicitUpdates, InlineReductions, HalideArgmax };

std::map<std::string, std::string> argmax_params(int w, int h, ArgmaxForm form) {
    return {{"width", std::to_string(w)},
            {"height", std::to_string(h)},
            {"inline_reductions", form == ArgmaxForm::InlineReductions ? "true" : "false"},
            {"halide_argmax", form == ArgmaxForm::HalideArgmax ? "true" : "false"}};
}

class ArgmaxDualRealization : public ::testing::TestWithParam<ArgmaxForm> {};

TEST_P(ArgmaxDualRealization, ColumnArgmaxMatchesTheHostAndTheFirstMaximum) {
    const int w = 1024, h = 40;
    Halide::Buffer<> in = coarse_input("column_argmax_in", w, h, 5);
    const std::map<std::string, std::string> p = argmax_params(w, h, GetParam());
    Halide::Buffer<> host = run_generator("column_argmax", p, false, Halide::Int(32), {w}, in);
    Halide::Buffer<> spyre = run_generator("column_argmax", p, true, Halide::Int(32), {w}, in);
    int wrong = 0;
    for (int x = 0; x < w; x++) {
        int want = 0;
        for (int y = 1; y < h; y++) {
            if (in.as<float>()(x, y) > in.as<float>()(x, want)) want = y;
        }
        const int hv = host.as<int>()(x), sv = spyre.as<int>()(x);
        if (hv != want || sv != hv) {
            if (wrong++ < 4) ADD_FAILURE() << "column " << x << ": spyre " << sv << ", host " << hv << ", want " << want;
        }
    }
    EXPECT_EQ(wrong, 0);
}

TEST_P(ArgmaxDualRealization, RowArgmaxMatchesTheHostAndTheFirstMaximum) {
    const int w = 1000, h = 64;
    Halide::Buffer<> in = coarse_input("row_argmax_in", w, h, 7);
    const std::map<std::string, std::string> p = argmax_params(w, h, GetParam());
    Halide::Buffer<> host = run_generator("row_argmax", p, false, Halide::Int(32), {h}, in);
    Halide::Buffer<> spyre = run_generator("row_argmax", p, true, Halide::Int(32), {h}, padded_copy(in, {(w + 31) / 32 * 32, h}));
    int wrong = 0;
    for (int y = 0; y < h; y++) {
        int want = 0;
        for (int x = 1; x < w; x++) {
            if (in.as<float>()(x, y) > in.as<float>()(want, y)) want = x;
        }
        const int hv = host.as<int>()(y), sv = spyre.as<int>()(y);
        if (hv != want || sv != hv) {
            if (wrong++ < 4) ADD_FAILURE() << "row " << y << ": spyre " << sv << ", host " << hv << ", want " << want;
        }
    }
    EXPECT_EQ(wrong, 0);
}

// int8 rows holding -128 and 127 (where -v would overflow) and float32 rows, against the host.
TEST(RowMinDualRealization, AMinimumAlongTheStickMatchesTheHostAtTheTypesExtremes) {
    for (const Halide::Type t : {Halide::Int(8), Halide::Float(32)}) {
        const int w = 256, h = 256;
        Halide::Buffer<> in = random_buffer("row_min_in", t, {w, h}, 23);
        if (t == Halide::Int(8)) {
            for (int y = 0; y < h; y += 3) in.as<int8_t>()(y % w, y) = -128;  // a third of the rows reach -128
            for (int x = 0; x < w; x++) in.as<int8_t>()(x, 1) = 127;         // and one row is all 127
        }
        const std::map<std::string, std::string> p = {{"row_min_in.type", t == Halide::Int(8) ? "int8" : "float32"},
                                                      {"row_min_out.type", t == Halide::Int(8) ? "int8" : "float32"}};
        Halide::Buffer<> host = run_generator("row_min", p, false, t, {h}, in);
        Halide::Buffer<> spyre = run_generator("row_min", p, true, t, {h}, in);
        int wrong = 0, extremes = 0;
        for (int y = 0; y < h; y++) {
            double want = INFINITY;
            for (int x = 0; x < w; x++) want = std::min(want, value_at(in, x, y, 0));
            extremes += want == -128 || want == 127;
            const double hv = value_at(host, y, 0, 0), sv = value_at(spyre, y, 0, 0);
            if (hv != want || sv != want) {
                if (wrong++ < 3) ADD_FAILURE() << "row " << y << ": spyre " << sv << ", host " << hv << ", want " << want;
            }
        }
        EXPECT_EQ(wrong, 0) << t;
        if (t == Halide::Int(8)) {
            EXPECT_GT(extremes, 80) << "the test does not reach the type's extremes";
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Forms, ArgmaxDualRealization,
                         ::testing::Values(ArgmaxForm::ExplicitUpdates, ArgmaxForm::InlineReductions,
                                           ArgmaxForm::HalideArgmax),
                         [](const ::testing::TestParamInfo<ArgmaxForm> &i) {
                             return std::string(i.param == ArgmaxForm::ExplicitUpdates    ? "explicit_updates"
                                                : i.param == ArgmaxForm::InlineReductions ? "inline_reductions"
                                                                                          : "halide_argmax");
                         });

}  // namespace
}  // namespace spyre::testing
