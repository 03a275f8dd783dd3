// The Spyre scheduling vocabulary (schedules/spyre_schedule.h): for each
// directive a small JIT pipeline scheduled with it, compiled through the Spyre
// pass and run on the simulated device, checked against the algorithm
// evaluated on the host; then one test per misuse, checking that the error
// names the Func (or tensor) and the rule.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "jit_helpers.h"
#include "spyre_lowering.h"
#include "spyre_schedule.h"

namespace spyre::testing {
namespace {

using namespace Halide;

// Values that cannot pass by accident: every element different.
float input_value(int i, int j, int k = 0) { return (float)((i * 7 + j * 13 + k * 5) % 23) / 7.0f - 1.5f; }

// Runs `out` (already scheduled) through the Spyre pass; returns the result.
// When `disassembly` is given, the program's .spyre.txt is read into it.
Buffer<float> run_spyre(Func out, const std::string &kernel, const std::vector<int> &extents,
                        std::string *disassembly = nullptr) {
    SpyreLoweringOptions o;
    o.kernel_name = kernel;
    if (disassembly) o.output_dir = ::testing::TempDir();
    attach_spyre_lowering(out, o);
    Buffer<float> result = out.realize(extents, Target("x86-64-linux"));
    set_compiling_for_spyre(false);
    if (disassembly) {
        std::ifstream f(o.output_dir + "/" + kernel + ".spyre.txt");
        std::stringstream ss;
        ss << f.rdbuf();
        *disassembly = ss.str();
    }
    return result;
}


int count(const std::string &text, const std::string &what) {
    int n = 0;
    for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) n++;
    return n;
}

// out(x, y) = compute(x, y) = in(x, y) * 2 + 1 over a W x H f32 tensor; the
// input is staged through its wrapper in.in().
struct Elementwise {
    int W, H;
    ImageParam in;
    Func compute{"compute"}, out{"out"};
    Var x{"x"}, y{"y"};

    Elementwise(int w, int h, const std::string &input_name = "ew_in") : W(w), H(h), in(Float(32), 2, input_name) {
        set_compiling_for_spyre(true);
        compute(x, y) = in(x, y) * 2.0f + 1.0f;
        out(x, y) = compute(x, y);
        constrain_tensor(in, {W, H});
        OutputImageParam ob = out.output_buffer();
        constrain_tensor(ob, {W, H});
    }
    void bind_input() {
        Buffer<float> input(W, H, in.name());
        for (int j = 0; j < H; j++)
            for (int i = 0; i < W; i++) input(i, j) = input_value(i, j);
        in.set(input);
    }
    void expect_matches(const Buffer<float> &r) const {
        for (int j = 0; j < H; j++)
            for (int i = 0; i < W; i++) ASSERT_EQ(r(i, j), input_value(i, j) * 2.0f + 1.0f) << i << "," << j;
    }
};

// ---- stick_vectorize -----------------------------------------------------

TEST(SchedulingVocabulary, StickVectorizeTakesTheLanesFromTheType) {
    Var x("x"), y("y");
    const std::vector<std::pair<Type, int>> cases = {{Float(32), 32}, {Float(16), 64}, {Int(8), 128}, {Int(32), 32}};
    for (const auto &c : cases) {
        Func f("sv_" + std::to_string(c.first.bits()) + (c.first.is_float() ? "f" : "i"));
        f(x, y) = cast(c.first, x + y);
        stick_vectorize(f, x);
        const auto &splits = f.get_schedule().splits();
        ASSERT_FALSE(splits.empty());
        const int64_t *factor = Internal::as_const_int(splits.back().factor);
        ASSERT_NE(factor, nullptr);
        EXPECT_EQ(*factor, c.second) << c.first;
    }
}

TEST(SchedulingVocabulary, StickVectorizedElementwiseMatchesTheAlgorithm) {
    Elementwise e(64, 32, "sv_in");
    Var core("core"), yi("yi");
    e.out.split(e.y, core, yi, 1).parallel(core);
    stick_vectorize(e.out, e.x);
    e.in.in().compute_at(e.out, core).store_in(MemoryType::VTCM);
    stick_vectorize(e.in.in(), e.in.in().args()[0]);
    e.compute.compute_at(e.out, core).store_in(MemoryType::VTCM);
    stick_vectorize(e.compute, e.x);
    e.bind_input();
    e.expect_matches(run_spyre(e.out, "sv_elementwise", {64, 32}));
}

// ---- stage_in_scratchpad -------------------------------------------------

TEST(SchedulingVocabulary, StageInScratchpadStagesAnInputWrapperAsDma) {
    Elementwise e(64, 32, "st_in");
    Var core("core"), yi("yi");
    e.out.split(e.y, core, yi, 1).parallel(core);
    stick_vectorize(e.out, e.x);
    stage_in_scratchpad(e.in.in(), e.out, core);
    stage_in_scratchpad(e.compute, e.out, core);
    e.bind_input();
    std::string txt;
    e.expect_matches(run_spyre(e.out, "st_elementwise", {64, 32}, &txt));
    EXPECT_GE(count(txt, "dma.load arg=st_in"), 32) << txt.substr(0, 2000);  // one load per core
}

TEST(SchedulingVocabulary, StageInScratchpadAtASerialLoopInsideTheCore) {
    Elementwise e(64, 32, "st2_in");
    Var core("core"), yi("yi");
    e.out.split(e.y, core, yi, 4).parallel(core);  // 8 cores, 4 rows each, staged row by row
    stick_vectorize(e.out, e.x);
    stage_in_scratchpad(e.in.in(), e.out, yi);
    stage_in_scratchpad(e.compute, e.out, yi);
    e.bind_input();
    e.expect_matches(run_spyre(e.out, "st2_elementwise", {64, 32}));
}

// ---- split_across_cores --------------------------------------------------

TEST(SchedulingVocabulary, CoreSplitPlannerIsGreedyInTheOrderGiven) {
    Var a("a"), b("b"), c("c");
    // a: 6 tiles -> 6 cores; 32 / 6 = 5 left: b (16 tiles) gets 4; 32 / 24 = 1 left: c gets 1.
    EXPECT_EQ(plan_core_split("f", {{a, 6, 1}, {b, 16, 1}, {c, 8, 1}}), (std::vector<int>{6, 4, 1}));
    // Order matters: b first takes 16, a then gets 2 (largest divisor of 6 <= 2).
    EXPECT_EQ(plan_core_split("f", {{b, 16, 1}, {a, 6, 1}}), (std::vector<int>{16, 2}));
    // Tiles bound the split: small work, fewer cores.
    EXPECT_EQ(plan_core_split("f", {{a, 128, 64}, {b, 96, 32}}), (std::vector<int>{2, 3}));
    // A fixed count is kept; the others share what it leaves.
    EXPECT_EQ(plan_core_split("f", {{a, 64, 1, 0}, {b, 4, 1, 4}}), (std::vector<int>{8, 4}));
}

TEST(SchedulingVocabulary, SplitAcrossCoresUsesFewerCoresForSmallWork) {
    Elementwise e(64, 4, "sc_in");  // 4 rows of 2 sticks: 8 tiles, 8 cores
    const CoreSplit s = split_across_cores(e.out, {{e.y, 4, 1}, {e.x, 64, 32}});
    EXPECT_EQ(s.total_cores, 8);
    EXPECT_EQ(s.cores, (std::vector<int>{4, 2}));
    EXPECT_EQ(s.per_core, (std::vector<int>{1, 32}));
    stick_vectorize(e.out, s.serial_of(e.x));
    stage_in_scratchpad(e.in.in(), e.out, s.core);
    stage_in_scratchpad(e.compute, e.out, s.core);
    e.bind_input();
    std::string txt;
    e.expect_matches(run_spyre(e.out, "sc_elementwise", {64, 4}, &txt));
    // Cores 0..7 each store one stick; the program has no work for core 8.
    EXPECT_NE(txt.find(".core 7\n.unit dma\ndma.load"), std::string::npos) << txt.substr(0, 2000);
    EXPECT_EQ(txt.find(".core 8\n.unit dma\ndma.load"), std::string::npos);
}

TEST(SchedulingVocabulary, SplitAcrossCoresOverAllCoresWithSerialTiles) {
    Elementwise e(128, 64, "sc2_in");
    const CoreSplit s = split_across_cores(e.out, {{e.y, 64, 1}, {e.x, 128, 32}});
    EXPECT_EQ(s.total_cores, 32);  // y takes all 32 cores; 2 rows per core
    Var xo("xo"), xi("xi");
    e.out.split(s.serial_of(e.x), xo, xi, 32).reorder(xi, s.serial_of(e.y), xo);
    stick_vectorize(e.out, xi);
    stage_in_scratchpad(e.in.in(), e.out, xo);
    stage_in_scratchpad(e.compute, e.out, xo);
    e.bind_input();
    e.expect_matches(run_spyre(e.out, "sc2_elementwise", {128, 64}));
}

TEST(SchedulingVocabulary, RowTilesAcrossCoresStageOneTileOfRowsPerStep) {
    Elementwise e(64, 32, "rt_in");  // 32 rows over 8 cores: 4 rows per core, tiles of 2 rows
    const RowTileLoops loops = split_row_tiles_across_cores(e.out, e.x, e.y, 32, 8, 2, 32);
    stage_in_scratchpad(e.in.in(), e.out, loops.yo);
    stage_in_scratchpad(e.compute, e.out, loops.yo);
    e.bind_input();
    std::string txt;
    e.expect_matches(run_spyre(e.out, "rt_elementwise", {64, 32}, &txt));
    EXPECT_NE(txt.find(".core 7\n.unit dma\n"), std::string::npos) << txt.substr(0, 2000);
    EXPECT_EQ(txt.find(".core 8\n.unit dma\n"), std::string::npos);
}

TEST(SchedulingVocabulary, RowTilesThatDoNotDivideTheRowsAreAnError) {
    Elementwise e(64, 30, "rt2_in");
    const std::string msg = error_of([&] { split_row_tiles_across_cores(e.out, e.x, e.y, 30, 8, 2, 32); });
    EXPECT_NE(msg.find("split_row_tiles_across_cores(Func 'out"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rows_padded (30) must be a multiple of cores (8) x tile_rows (2)"), std::string::npos) << msg;
}

// ---- set_device_layout ---------------------------------------------------

TEST(SchedulingVocabulary, DefaultDeviceLayoutIsRecordedAndCompiles) {
    Elementwise e(64, 32, "dl_in");
    set_device_layout(e.in, StickLayout{0, {1, 0}});
    OutputImageParam ob = e.out.output_buffer();
    set_device_layout(ob, default_stick_layout(2));
    ASSERT_TRUE(recorded_device_layout("dl_in").has_value());
    EXPECT_EQ(recorded_device_layout("dl_in")->order, (std::vector<int>{1, 0}));
    EXPECT_EQ(recorded_device_layout(e.out.name())->stick_dim, 0);
    const CoreSplit s = split_across_cores(e.out, {{e.y, 32, 1}});
    stick_vectorize(e.out, e.x);
    stage_in_scratchpad(e.in.in(), e.out, s.core);
    stage_in_scratchpad(e.compute, e.out, s.core);
    e.bind_input();
    std::string txt;
    e.expect_matches(run_spyre(e.out, "dl_elementwise", {64, 32}, &txt));
    EXPECT_NE(txt.find(".arg dl_in input f32 extent=[64,32] stick=0 order=[1,0]"), std::string::npos) << txt.substr(0, 400);
}

// ---- matmul_on_pt + accumulate_in_scratchpad -----------------------------

// C(n, m) = sum_k A(k, m) * B(n, k), f32, N = 128, M = 16, K = 64.
struct Matmul {
    static constexpr int N = 128, M = 16, K = 64;
    ImageParam A, B;
    Func acc{"mm_acc"}, C{"mm_C"};
    Var n{"n"}, m{"m"};
    RDom k;

    explicit Matmul(const std::string &prefix) : A(Float(32), 2, prefix + "_A"), B(Float(32), 2, prefix + "_B") {
        set_compiling_for_spyre(true);
        k = RDom(0, K, "k");
        acc(n, m) = 0.0f;
        acc(n, m) += A(k, m) * B(n, k);
        C(n, m) = acc(n, m);
        constrain_tensor(A, {K, M});
        constrain_tensor(B, {N, K});
        OutputImageParam ob = C.output_buffer();
        constrain_tensor(ob, {N, M});
    }
    void run_and_check(const std::string &kernel, std::string *txt) {
        Buffer<float> a(K, M, A.name()), b(N, K, B.name());
        a.for_each_element([&](int i, int j) { a(i, j) = input_value(i, j); });
        b.for_each_element([&](int i, int j) { b(i, j) = input_value(j, i, 1); });
        A.set(a);
        B.set(b);
        Buffer<float> r = run_spyre(C, kernel, {N, M}, txt);
        double max_ref = 0;
        for (int j = 0; j < M; j++)
            for (int i = 0; i < N; i++) {
                double ref = 0;
                for (int kk = 0; kk < K; kk++) ref += (double)a(kk, j) * b(i, kk);
                max_ref = std::max(max_ref, std::fabs(ref));
                ASSERT_NEAR(r(i, j), ref, 1e-4 * (1 + std::fabs(ref))) << i << "," << j;
            }
        EXPECT_GT(max_ref, 1.0);
    }
};

TEST(SchedulingVocabulary, MatmulOnPtCompilesToPtMatmulAndMatches) {
    Matmul mm("pt");
    const CoreSplit s = split_across_cores(mm.C, {{mm.m, Matmul::M, 8}, {mm.n, Matmul::N, 64}});
    EXPECT_EQ(s.total_cores, 4);
    stick_vectorize(mm.C, s.serial_of(mm.n));
    accumulate_in_scratchpad(mm.acc, mm.C, s.core);
    const PtMatmul pt = matmul_on_pt(mm.acc, mm.k, mm.n, mm.m);
    EXPECT_FALSE(pt.k_chunked);
    stage_in_scratchpad(mm.A.in(), mm.C, s.core);
    stage_in_scratchpad(mm.B.in(), mm.C, s.core);
    std::string txt;
    mm.run_and_check("pt_matmul", &txt);
    EXPECT_EQ(count(txt, "pt.matmul"), 4) << txt;  // one 8 x 64 x 64 tile per core
    EXPECT_NE(txt.find("m=8 n=64 k=64 in_type=f32"), std::string::npos) << txt;
}

TEST(SchedulingVocabulary, MatmulOnPtWithKChunksStagesOperandsPerChunk) {
    Matmul mm("ptk");
    const CoreSplit s = split_across_cores(mm.C, {{mm.m, Matmul::M, 8}, {mm.n, Matmul::N, 64}});
    stick_vectorize(mm.C, s.serial_of(mm.n));
    accumulate_in_scratchpad(mm.acc, mm.C, s.core);
    const PtMatmul pt = matmul_on_pt(mm.acc, mm.k, mm.n, mm.m, 32);
    EXPECT_TRUE(pt.k_chunked);
    stage_in_scratchpad(mm.A.in(), mm.acc, pt.k_outer);
    stage_in_scratchpad(mm.B.in(), mm.acc, pt.k_outer);
    std::string txt;
    mm.run_and_check("ptk_matmul", &txt);
    EXPECT_NE(txt.find("k=32 in_type=f32"), std::string::npos) << txt;  // one PT tile per K chunk
}

TEST(SchedulingVocabulary, AccumulateInScratchpadReducesOnTheSfu) {
    // out(x, y) = sum_r in(x, r, y): an elementwise accumulation, not a matmul.
    set_compiling_for_spyre(true);
    const int W = 64, R = 4, H = 8;
    ImageParam in(Float(32), 3, "acc_in");
    Func acc("sum_acc"), out("sum_out");
    Var x("x"), y("y");
    RDom r(0, R, "r");
    acc(x, y) = 0.0f;
    acc(x, y) += in(x, r, y);
    out(x, y) = acc(x, y);
    constrain_tensor(in, {W, R, H});
    OutputImageParam ob = out.output_buffer();
    constrain_tensor(ob, {W, H});
    const CoreSplit s = split_across_cores(out, {{y, H, 1}, {x, W, 32}});
    EXPECT_EQ(s.total_cores, 16);
    stick_vectorize(out, s.serial_of(x));
    accumulate_in_scratchpad(acc, out, s.core);
    acc.update().reorder(x, r, y);
    stick_vectorize(acc, 0, x);
    stage_in_scratchpad(in.in(), out, s.core);
    Buffer<float> input(W, R, H, "acc_in");
    input.for_each_element([&](int i, int j, int kk) { input(i, j, kk) = input_value(i, j, kk); });
    in.set(input);
    std::string txt;
    Buffer<float> res = run_spyre(out, "sum_accumulate", {W, H}, &txt);
    EXPECT_EQ(txt.find("pt.matmul"), std::string::npos);  // not a matmul: the SFU adds sticks
    EXPECT_NE(txt.find("sfu.add"), std::string::npos) << txt.substr(0, 2000);
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) {
            float ref = 0.0f;
            for (int kk = 0; kk < R; kk++) ref += input(i, kk, j);
            ASSERT_EQ(res(i, j), ref) << i << "," << j;
        }
}

// ---- misuse: one test per rule -------------------------------------------

TEST(SchedulingVocabularyErrors, StickVectorizeRejectsATypeWithoutSticks) {
    Func f("f64_func");
    Var x("x");
    f(x) = cast<double>(x);
    const std::string msg = error_of([&] { stick_vectorize(f, x); });
    EXPECT_NE(msg.find("stick_vectorize(Func 'f64_func'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("has no stick layout on Spyre"), std::string::npos) << msg;
}

// Tuple elements share a stick layout when a stick holds as many of each (argmax: an int32
// index beside a float32 value); float16 beside int32 (64 and 32 lanes) cannot.
TEST(SchedulingVocabularyErrors, StickVectorizeRejectsATupleOfTwoStickWidths) {
    Func f("mixed_tuple");
    Var x("x");
    f(x) = Tuple(cast<float16_t>(x), cast<int32_t>(x));
    const std::string msg = error_of([&] { stick_vectorize(f, x); });
    EXPECT_NE(msg.find("stick_vectorize(Func 'mixed_tuple'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("must have as many lanes per stick to share a stick layout (this one mixes float16 and int32"),
              std::string::npos)
        << msg;
}

TEST(SchedulingVocabularyErrors, StickVectorizeTakesATupleOfOneStickWidth) {
    Func f("index_and_value");
    Var x("x");
    f(x) = Tuple(cast<int32_t>(x), cast<float>(x));
    EXPECT_NO_THROW(stick_vectorize(f, x));
}

TEST(SchedulingVocabularyErrors, StickVectorizeTakesATupleOfOneType) {
    Func f("f32_tuple");
    Var x("x");
    f(x) = Tuple(cast<float>(x), cast<float>(2 * x));
    EXPECT_NO_THROW(stick_vectorize(f, x));
}

TEST(SchedulingVocabularyErrors, StickVectorizeRejectsAVarThatIsNotALoop) {
    Func f("sv_func");
    Var x("x"), y("y"), z("z");
    f(x, y) = cast<float>(x + y);
    const std::string msg = error_of([&] { stick_vectorize(f, z); });
    EXPECT_NE(msg.find("Func 'sv_func'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'z' is not a loop of its definition (its loops: 'x', 'y')"), std::string::npos) << msg;
}

TEST(SchedulingVocabularyErrors, StageInScratchpadRejectsALoopTheConsumerDoesNotHave) {
    Elementwise e(64, 32, "e1_in");
    Var nowhere("nowhere");
    const std::string msg = error_of([&] { stage_in_scratchpad(e.compute, e.out, nowhere); });
    EXPECT_NE(msg.find("stage_in_scratchpad(Func '" + e.compute.name() + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'nowhere' is not a loop of the consumer Func '" + e.out.name() + "'"), std::string::npos) << msg;
}

TEST(SchedulingVocabularyErrors, StageInScratchpadRejectsAnAccumulator) {
    Matmul mm("e2");
    const std::string msg = error_of([&] { stage_in_scratchpad(mm.acc, mm.C, mm.m); });
    EXPECT_NE(msg.find("Func '" + mm.acc.name() + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("use accumulate_in_scratchpad"), std::string::npos) << msg;
}

TEST(SchedulingVocabularyErrors, AccumulateInScratchpadRejectsAFuncWithoutUpdates) {
    Elementwise e(64, 32, "e3_in");
    const std::string msg = error_of([&] { accumulate_in_scratchpad(e.compute, e.out, e.y); });
    EXPECT_NE(msg.find("accumulate_in_scratchpad(Func '" + e.compute.name() + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("has no update definition"), std::string::npos) << msg;
}

TEST(SchedulingVocabularyErrors, SplitAcrossCoresRejectsPartialTiles) {
    Elementwise e(64, 32, "e4_in");
    const std::string msg = error_of([&] { split_across_cores(e.out, {{e.x, 48, 32}}); });
    EXPECT_NE(msg.find("split_across_cores(Func '" + e.out.name() + "')"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'x' has extent 48, not a whole number of tiles of 32"), std::string::npos) << msg;
}

TEST(SchedulingVocabularyErrors, SplitAcrossCoresRejectsWhenNoEvenSplitReachesMinCores) {
    Elementwise e(64, 32, "e5_in");
    CoreSplitOptions o;
    o.min_cores = 2;
    const std::string msg = error_of([&] { split_across_cores(e.out, {{e.x, 64, 64}}, o); });
    EXPECT_NE(msg.find("Func '" + e.out.name() + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("no even split gives at least 2 cores ('x': 1 tiles"), std::string::npos) << msg;
}

TEST(SchedulingVocabularyErrors, SplitAcrossCoresRejectsUnevenFixedCounts) {
    Elementwise e(64, 32, "e6_in");
    const std::string msg = error_of([&] { split_across_cores(e.out, {{e.y, 32, 1, 3}}); });
    EXPECT_NE(msg.find("Func '" + e.out.name() + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'y' asks for 3 cores, which do not divide its 32 tiles evenly"), std::string::npos) << msg;
}

TEST(SchedulingVocabularyErrors, SplitAcrossCoresRejectsAVarThatIsNotAnOutputDimension) {
    Elementwise e(64, 32, "e7_in");
    Var other("other");
    const std::string msg = error_of([&] { split_across_cores(e.out, {{other, 32, 1}}); });
    EXPECT_NE(msg.find("Func '" + e.out.name() + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'other' is not a pure var of the Func"), std::string::npos) << msg;
}

TEST(SchedulingVocabularyErrors, SplitAcrossCoresRejectsASecondParallelLoop) {
    Elementwise e(64, 32, "e8_in");
    e.out.parallel(e.y);
    const std::string msg = error_of([&] { split_across_cores(e.out, {{e.x, 64, 32}}); });
    EXPECT_NE(msg.find("Func '" + e.out.name() + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("the loop 'y' is already parallel; exactly one loop may be split across the cores"),
              std::string::npos)
        << msg;
}

TEST(SchedulingVocabularyErrors, DeviceLayoutStickDimensionMustBeTheDeclaredOne) {
    Elementwise e(64, 32, "e9_in");
    const std::string msg = error_of([&] { set_device_layout(e.in, StickLayout{1, {0, 1}}); });
    EXPECT_NE(msg.find("set_device_layout(tensor 'e9_in')"), std::string::npos) << msg;
    EXPECT_NE(msg.find("the layout stick=1 order=[0,1] puts the sticks along dimension 1"), std::string::npos) << msg;
    EXPECT_FALSE(recorded_device_layout("e9_in").has_value());
}

TEST(SchedulingVocabularyErrors, DeviceLayoutOrderMustBeAPermutation) {
    Elementwise e(64, 32, "e10_in");
    const std::string msg = error_of([&] { set_device_layout(e.in, StickLayout{0, {1, 1}}); });
    EXPECT_NE(msg.find("tensor 'e10_in'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("is not a permutation of the tensor's 2 dimensions"), std::string::npos) << msg;
}

TEST(SchedulingVocabularyErrors, DeviceLayoutNeedsAConstrainedTensor) {
    const std::string msg = error_of([&] { set_device_layout("never_constrained", default_stick_layout(2)); });
    EXPECT_NE(msg.find("tensor 'never_constrained'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("declare it with spyre::constrain_tensor first"), std::string::npos) << msg;
}

TEST(SchedulingVocabularyErrors, MatmulOnPtRejectsANonFloat32Accumulator) {
    Var n("n"), m("m");
    RDom k(0, 64, "k");
    ImageParam A(Float(16), 2, "h_A"), B(Float(16), 2, "h_B");
    Func acc("half_acc");
    acc(n, m) = cast<float16_t>(0);
    acc(n, m) += A(k, m) * B(n, k);
    const std::string msg = error_of([&] { matmul_on_pt(acc, k, n, m); });
    EXPECT_NE(msg.find("matmul_on_pt(Func 'half_acc'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("the PT accumulates in float32 (float16 or float32 operands) or int32 (int8 operands), but the accumulator has type float16"), std::string::npos) << msg;
}

TEST(SchedulingVocabularyErrors, MatmulOnPtRejectsAnUpdateThatIsNotASumOfProducts) {
    Var n("n"), m("m");
    RDom k(0, 64, "k");
    ImageParam A(Float(32), 2, "mx_A");
    Func acc("max_acc");
    acc(n, m) = 0.0f;
    acc(n, m) = max(acc(n, m), A(k, m));
    const std::string msg = error_of([&] { matmul_on_pt(acc, k, n, m); });
    EXPECT_NE(msg.find("Func 'max_acc'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("is not acc(n, m) += A(k, m) * B(n, k)"), std::string::npos) << msg;
}

TEST(SchedulingVocabularyErrors, MatmulOnPtRejectsAnRVarOfAnotherReduction) {
    Matmul mm("e11");
    RDom other(0, 8, "other");
    const std::string msg = error_of([&] { matmul_on_pt(mm.acc, other, mm.n, mm.m); });
    EXPECT_NE(msg.find("Func '" + mm.acc.name() + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'other$x' is not a reduction loop of the update (its reduction loops: 'k$x')"),
              std::string::npos)
        << msg;
}

TEST(SchedulingVocabularyErrors, MatmulOnPtRejectsAKChunkThatDoesNotDivideK) {
    Matmul mm("e12");
    const std::string msg = error_of([&] { matmul_on_pt(mm.acc, mm.k, mm.n, mm.m, 48); });
    EXPECT_NE(msg.find("Func '" + mm.acc.name() + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("k_chunk 48 does not divide the reduction extent 64"), std::string::npos) << msg;
}

// 16 divides K = 64 but is half a stick of float32: the second chunk would start mid-stick.
TEST(SchedulingVocabularyErrors, MatmulOnPtRejectsAKChunkThatIsNotWholeSticks) {
    Matmul mm("e12s");
    const std::string msg = error_of([&] { matmul_on_pt(mm.acc, mm.k, mm.n, mm.m, 16); });
    EXPECT_NE(msg.find("matmul_on_pt(Func '" + mm.acc.name() + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("k_chunk 16 is not a whole number of sticks (16 / 32 = 0.5"), std::string::npos) << msg;
    EXPECT_NE(msg.find("use a multiple of 32 that divides 64"), std::string::npos) << msg;
}

// One chunk of all of K is the unchunked matmul; pt.k_outer would be k itself.
TEST(SchedulingVocabularyErrors, MatmulOnPtRejectsAKChunkEqualToK) {
    Matmul mm("e12k");
    const std::string msg = error_of([&] { matmul_on_pt(mm.acc, mm.k, mm.n, mm.m, 64); });
    EXPECT_NE(msg.find("matmul_on_pt(Func '" + mm.acc.name() + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("k_chunk 64 equals the reduction extent"), std::string::npos) << msg;
    EXPECT_NE(msg.find("pass k_chunk = 0"), std::string::npos) << msg;
}


}  // namespace
}  // namespace spyre::testing
