// The Spyre backend's compile-time rules: one small pipeline per rule, each
// error checked for the Func, the loop and the rule it names. The first test
// is the same pipeline scheduled legally, run against a host evaluation, so
// the negative tests differ from a working kernel in one respect each.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "jit_helpers.h"
#include "spyre_lowering.h"
#include "spyre_schedule.h"

namespace spyre::testing {
namespace {

using namespace Halide;

// out(x, y) = compute(x, y) = stage(x, y) * 2 + 1, stage = in, on a 64 x 32 f32 tensor.
struct Elementwise {
    ImageParam in{Float(32), 2, "in"};
    Func stage{"stage"}, compute{"compute"}, out{"out"};
    Var x{"x"}, y{"y"}, core{"core"}, yi{"yi"};

    explicit Elementwise(bool stage_input = true) {
        set_compiling_for_spyre(true);
        stage(x, y) = in(x, y);
        compute(x, y) = (stage_input ? stage(x, y) : in(x, y)) * 2.0f + 1.0f;
        out(x, y) = compute(x, y);
        constrain_tensor(in, {64, 32});
        OutputImageParam ob = out.output_buffer();
        constrain_tensor(ob, {64, 32});
    }
    // The legal Spyre schedule: one row per core, rows staged and computed in scratchpad.
    void schedule(int lanes = 32) {
        out.split(y, core, yi, 1).parallel(core).vectorize(x, lanes);
        stage.compute_at(out, core).store_in(MemoryType::VTCM).vectorize(x, lanes);
        compute.compute_at(out, core).store_in(MemoryType::VTCM).vectorize(x, lanes);
    }
    Buffer<float> run() {
        SpyreLoweringOptions o;
        o.kernel_name = "elementwise";
        attach_spyre_lowering(out, o);
        Buffer<float> input(64, 32, "in");
        for (int j = 0; j < 32; j++)
            for (int i = 0; i < 64; i++) input(i, j) = (float)(i * 7 + j * 13 % 11) / 17.0f - 2.0f;
        in.set(input);
        Buffer<float> result = out.realize({64, 32}, Target("x86-64-linux"));
        set_compiling_for_spyre(false);
        return result;
    }
};

std::string compile_error_of(Elementwise &e) {
    try {
        e.run();
    } catch (const Halide::CompileError &err) {
        set_compiling_for_spyre(false);
        return err.what();
    }
    set_compiling_for_spyre(false);
    ADD_FAILURE() << "expected a compile error";
    return "";
}

// Attaches the Spyre lowering to `out` and JIT-compiles it; returns the compile
// error (and records a failure if there was none). Leaves Spyre mode off.
std::string spyre_compile_error_of(Func out, const std::string &kernel_name) {
    const std::string msg = spyre_compile_error(out, kernel_name);
    if (msg.empty()) ADD_FAILURE() << "expected a compile error";
    return msg;
}

TEST(SpyreCompile, LegalElementwiseScheduleRunsAndMatchesTheAlgorithm) {
    Elementwise e;
    e.schedule();
    Buffer<float> r = e.run();
    for (int j = 0; j < 32; j++)
        for (int i = 0; i < 64; i++) {
            const float v = (float)(i * 7 + j * 13 % 11) / 17.0f - 2.0f;
            ASSERT_EQ(r(i, j), v * 2.0f + 1.0f) << i << "," << j;
        }
}

TEST(SpyreCompile, CopyToHostStagingBecomesDma) {
    Elementwise e;
    e.schedule();
    e.stage.copy_to_host();  // a halide_buffer_copy stage instead of a copy loop
    Buffer<float> r = e.run();
    for (int j = 0; j < 32; j++)
        for (int i = 0; i < 64; i++) {
            const float v = (float)(i * 7 + j * 13 % 11) / 17.0f - 2.0f;
            ASSERT_EQ(r(i, j), v * 2.0f + 1.0f) << i << "," << j;
        }
}

TEST(SpyreCompileErrors, ScratchpadFootprintOverBudgetPrintsFootprintAndBudget) {
    Elementwise e;
    // Stage the whole 64 x 32 tensor 512 times over: compute_at the root of the core loop with a huge allocation.
    Func big("big");
    e.out.split(e.y, e.core, e.yi, 1).parallel(e.core).vectorize(e.x, 32);
    e.stage.compute_at(e.out, e.core).store_in(MemoryType::VTCM).vectorize(e.x, 32).bound_extent(e.x, 1 << 20);
    e.compute.compute_at(e.out, e.core).store_in(MemoryType::VTCM).vectorize(e.x, 32);
    std::string msg = compile_error_of(e);
    EXPECT_NE(msg.find("scratchpad footprint over budget"), std::string::npos) << msg;
    EXPECT_NE(msg.find("the budget is 2097152 bytes per core"), std::string::npos) << msg;
    EXPECT_NE(msg.find("stage"), std::string::npos) << msg;
}

TEST(SpyreCompileErrors, VectorsThatAreNotWholeSticksNameTheFunc) {
    Elementwise e;
    e.schedule(16);  // 16 x f32 = 64 bytes: half a stick
    std::string msg = compile_error_of(e);
    EXPECT_NE(msg.find("vectors that are not whole sticks"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Func 'stage'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("vectorize by a multiple of 32 lanes"), std::string::npos) << msg;
}

TEST(SpyreCompileErrors, ComputeReadingDramWithoutStagingIsRejected) {
    Elementwise e(/*stage_input=*/false);
    e.out.split(e.y, e.core, e.yi, 1).parallel(e.core).vectorize(e.x, 32);
    e.compute.compute_at(e.out, e.core).store_in(MemoryType::VTCM).vectorize(e.x, 32);
    std::string msg = compile_error_of(e);
    EXPECT_NE(msg.find("Func 'compute'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("reads the DRAM buffer 'in' without staging it in scratchpad"), std::string::npos) << msg;
}

TEST(SpyreCompileErrors, ScratchpadFuncStoredInHeapIsRejected) {
    Elementwise e;
    e.out.split(e.y, e.core, e.yi, 1).parallel(e.core).vectorize(e.x, 32);
    e.stage.compute_at(e.out, e.core).store_in(MemoryType::VTCM).vectorize(e.x, 32);
    e.compute.compute_at(e.out, e.core).vectorize(e.x, 32);  // no store_in(VTCM)
    std::string msg = compile_error_of(e);
    EXPECT_NE(msg.find("Func 'compute'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(".store_in(MemoryType::VTCM)"), std::string::npos) << msg;
}

TEST(SpyreCompileErrors, ExtentsThatAreNotConstantsAreRejected) {
    set_compiling_for_spyre(true);
    ImageParam in(Float(32), 1, "vin");
    Param<int> n("n");
    Func stage("vstage"), acc("vacc"), out("vout");
    Var x("x"), c("c"), xi("xi");
    RDom r(0, n);  // a reduction whose extent is a run-time parameter
    stage(x) = in(x);
    acc(x) = 0.0f;
    acc(x) += stage(x) * cast<float>(r);
    out(x) = acc(x);
    constrain_tensor(in, {1024});
    OutputImageParam ob = out.output_buffer();
    constrain_tensor(ob, {1024});
    out.split(x, c, xi, 32).parallel(c).vectorize(xi);
    stage.compute_at(out, c).store_in(MemoryType::VTCM).vectorize(x, 32);
    acc.compute_at(out, c).store_in(MemoryType::VTCM).vectorize(x, 32);
    acc.update().vectorize(x, 32);
    const std::string msg = spyre_compile_error_of(out, "vcopy");
    EXPECT_NE(msg.find("Func 'vacc'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("extents must be compile-time constants"), std::string::npos) << msg;
}

TEST(SpyreCompileErrors, UnsupportedConstructIsNamed) {
    set_compiling_for_spyre(true);
    ImageParam in(Float(32), 2, "sin_in");
    Func stage("sin_stage"), compute("sin_compute"), out("sin_out");
    Var x("x"), y("y"), core("core"), yi("yi");
    stage(x, y) = in(x, y);
    compute(x, y) = sin(stage(x, y));
    out(x, y) = compute(x, y);
    constrain_tensor(in, {64, 32});
    OutputImageParam ob = out.output_buffer();
    constrain_tensor(ob, {64, 32});
    out.split(y, core, yi, 1).parallel(core).vectorize(x, 32);
    stage.compute_at(out, core).store_in(MemoryType::VTCM).vectorize(x, 32);
    compute.compute_at(out, core).store_in(MemoryType::VTCM).vectorize(x, 32);
    const std::string msg = spyre_compile_error_of(out, "sin");
    EXPECT_NE(msg.find("Func 'sin_compute'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("sin_f32"), std::string::npos) << msg;
    EXPECT_NE(msg.find("has no SFU instruction"), std::string::npos) << msg;
}

TEST(SpyreCompileErrors, TwoCoreSplitsAreRejected) {
    Elementwise e;
    // Two loops split across cores: rows and halves of rows.
    Var xo("xo"), xi("xi");
    e.out.split(e.x, xo, xi, 32).parallel(xo).parallel(e.y).vectorize(xi);
    e.stage.compute_at(e.out, xo).store_in(MemoryType::VTCM).vectorize(e.x, 32);
    e.compute.compute_at(e.out, xo).store_in(MemoryType::VTCM).vectorize(e.x, 32);
    std::string msg = compile_error_of(e);
    EXPECT_NE(msg.find("are both parallel; exactly one loop may be split across the cores"), std::string::npos) << msg;
}

TEST(SpyreCompileErrors, AReductionSplitAcrossCoresIsRefused) {
    // sum over the rows, the reduction split over 32 cores with atomic(): each core would add its
    // partial sum into the same output. The error points to the rfactor form the backend compiles.
    set_compiling_for_spyre(true);
    ImageParam in(Float(32), 2, "xr_in");
    Func stage("xr_stage"), acc("xr_acc"), out("xr_out");
    Var x("x"), y("y");
    RDom r(0, 1024, "r");
    stage(x, y) = in(x, y);
    acc(x) = 0.0f;
    acc(x) += stage(x, r);
    out(x) = acc(x);
    constrain_tensor(in, {64, 1024});
    OutputImageParam ob = out.output_buffer();
    constrain_tensor(ob, {64});
    out.vectorize(x, 32);
    acc.compute_root().store_in(MemoryType::VTCM).vectorize(x, 32);
    RVar rc("rc"), ri("ri");
    acc.update().atomic().split(r, rc, ri, 32).parallel(rc).vectorize(x, 32);
    stage.compute_at(acc, rc).store_in(MemoryType::VTCM).vectorize(x, 32);
    const std::string msg = spyre_compile_error_of(out, "xr");
    EXPECT_NE(msg.find("in Func 'xr_acc'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("splits its reduction across the cores with atomic()"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Use rfactor instead"), std::string::npos) << msg;
}

// out(x, y) = in(x, y) * scale(y), the per-row scale staged per core: `rows` rows of the
// 64-wide input on each core, so scale's tile is `rows` elements of one dimension.
struct RowScale {
    ImageParam in, scale;
    Func res, out;
    Var x{"x"}, y{"y"}, core{"core"}, yi{"yi"};
    int rows_total;
    RowScale(const std::string &n, int rows_total, int rows_per_core)
        : in(Float(32), 2, n + "_in"), scale(Float(32), 1, n + "_scale"), res(n + "_res"), out(n + "_out"),
          rows_total(rows_total) {
        set_compiling_for_spyre(true);
        Func in_s = in.in(), scale_s = scale.in();
        res(x, y) = in_s(x, y) * scale_s(y);
        out(x, y) = res(x, y);
        constrain_tensor(in, {64, rows_total});
        constrain_tensor(scale, {rows_total});
        OutputImageParam ob = out.output_buffer();
        constrain_tensor(ob, {64, rows_total});
        out.split(y, core, yi, rows_per_core).parallel(core);
        stick_vectorize(out, x);
        stage_in_scratchpad(in_s, out, core);
        stage_in_scratchpad(scale_s, out, core);
        stage_in_scratchpad(res, out, core);
    }
};

// 48 rows on one core: scale's tile is 1.5 sticks. stage_in_scratchpad rounds it up to two
// whole sticks (TailStrategy::RoundUp) instead of shifting the last vector below the tile,
// which failed with "index expression uses 'scale.min.0', which is not a compile-time constant".
TEST(SpyreCompile, AStageOfPartialSticksIsRoundedUpToWholeSticks) {
    RowScale k("rs48", 48, 48);
    Buffer<float> a(64, 48, k.in.name()), s(48, k.scale.name());
    a.for_each_element([&](int i, int j) { a(i, j) = (float)((i * 5 + j * 3) % 17) / 8.0f - 1.0f; });
    s.for_each_element([&](int j) { s(j) = 0.25f + (float)(j % 7); });
    k.in.set(padded_copy(a, {64, 48}));
    k.scale.set(padded_copy(s, {64}));
    SpyreLoweringOptions o;
    o.kernel_name = "rs48";
    attach_spyre_lowering(k.out, o);
    Buffer<float> r(64, 48);
    realize_for_spyre(k.out, r);
    for (int j = 0; j < 48; j++)
        for (int i = 0; i < 64; i++) ASSERT_EQ(r(i, j), a(i, j) * s(j)) << i << "," << j;
}

// 16 rows per core: core 1's tile of scale starts 16 floats (64 bytes) into a stick. The error
// names the staged Func, the core loop and where the tiles start, not an unconstrained tensor.
TEST(SpyreCompileErrors, AStageNarrowerThanAStickOffTheStickGridNamesWhereItsTilesStart) {
    RowScale k("rs16", 64, 16);
    const std::string msg = spyre_compile_error_of(k.out, "rs16");
    EXPECT_NE(msg.find("in Func 'rs16_scale.in()', loop 'rs16_out.s0.y.core'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("DMA of 'rs16_scale' is not aligned to whole sticks (offset 64 bytes; a stick is 128 bytes)"),
              std::string::npos) << msg;
    EXPECT_NE(msg.find("a whole number of sticks"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("constrain_tensor"), std::string::npos) << msg;
}

// i32(A) * i32(B) of int8 A, B: Halide makes it i32(widening_mul(A, B)), an int16 product, which
// is exact, so the SFU computes it as an int32 product of the widened operands (it used to be
// refused as "cast from int8 to int16", a type the user never wrote). Widening in staged Funcs
// first compiles too.
struct Int8Product {
    ImageParam A, B;
    Func aw, bw, prod, out;
    Var x{"x"}, y{"y"}, core{"core"}, yi{"yi"};
    Int8Product(const std::string &n, bool widen_first)
        : A(Int(8), 2, n + "_A"), B(Int(8), 2, n + "_B"), aw(n + "_aw"), bw(n + "_bw"), prod(n + "_prod"), out(n + "_out") {
        set_compiling_for_spyre(true);
        Func as = A.in(), bs = B.in();
        if (widen_first) {
            aw(x, y) = ConciseCasts::i32(as(x, y));
            bw(x, y) = ConciseCasts::i32(bs(x, y));
            prod(x, y) = aw(x, y) * bw(x, y);
        } else {
            prod(x, y) = ConciseCasts::i32(as(x, y)) * ConciseCasts::i32(bs(x, y));
        }
        out(x, y) = prod(x, y);
        constrain_tensor(A, {128, 32});
        constrain_tensor(B, {128, 32});
        OutputImageParam ob = out.output_buffer();
        constrain_tensor(ob, {128, 32});
        out.split(y, core, yi, 1).parallel(core);
        stick_vectorize(out, x);
        stage_in_scratchpad(as, out, core);
        stage_in_scratchpad(bs, out, core);
        if (widen_first) {
            stage_in_scratchpad(aw, out, core);
            stage_in_scratchpad(bw, out, core);
        }
        stage_in_scratchpad(prod, out, core);
    }
};

void expect_int8_product_matches(bool widen_first, const std::string &name) {
    Int8Product k(name, widen_first);
    Buffer<int8_t> a(128, 32, k.A.name()), b(128, 32, k.B.name());
    a.for_each_element([&](int i, int j) { a(i, j) = (int8_t)((i * 7 + j * 13) % 255 - 127); });
    b.for_each_element([&](int i, int j) { b(i, j) = (int8_t)((i * 11 + j * 5) % 251 - 125); });
    k.A.set(a);
    k.B.set(b);
    SpyreLoweringOptions o;
    o.kernel_name = name;
    attach_spyre_lowering(k.out, o);
    Buffer<int32_t> r(128, 32);
    realize_for_spyre(k.out, r);
    int distinct_extremes = 0;
    for (int j = 0; j < 32; j++)
        for (int i = 0; i < 128; i++) {
            ASSERT_EQ(r(i, j), (int32_t)a(i, j) * (int32_t)b(i, j)) << i << "," << j;
            distinct_extremes += std::abs(r(i, j)) > 10000;
        }
    EXPECT_GT(distinct_extremes, 0) << "no product outside int8 x int8 -> small range; the test could pass by accident";
}

TEST(SpyreCompile, AnInt8ProductWidenedInStagedFuncsFirstMatchesTheAlgorithm) {
    expect_int8_product_matches(/*widen_first=*/true, "i8w");
}

TEST(SpyreCompile, AnInt8ProductWrittenAsI32CastsCompilesOnTheSfuAndMatches) {
    expect_int8_product_matches(/*widen_first=*/false, "i8p");
}

// Integer division has no SFU instruction: the refusal says so and what to use instead.
TEST(SpyreCompileErrors, IntegerDivisionNamesTheFloatRoute) {
    set_compiling_for_spyre(true);
    ImageParam A(Int(32), 2, "idiv_A"), B(Int(32), 2, "idiv_B");
    Func q("idiv_q"), out("idiv_out");
    Var x("x"), y("y"), core("core"), yi("yi");
    Func as = A.in(), bs = B.in();
    q(x, y) = as(x, y) / bs(x, y);
    out(x, y) = q(x, y);
    constrain_tensor(A, {64, 32});
    constrain_tensor(B, {64, 32});
    OutputImageParam ob = out.output_buffer();
    constrain_tensor(ob, {64, 32});
    out.split(y, core, yi, 1).parallel(core);
    stick_vectorize(out, x);
    stage_in_scratchpad(as, out, core);
    stage_in_scratchpad(bs, out, core);
    stage_in_scratchpad(q, out, core);
    const std::string msg = spyre_compile_error_of(out, "idiv");
    EXPECT_NE(msg.find("integer division (int32) is not supported on the SFU"), std::string::npos) << msg;
    EXPECT_NE(msg.find("divide in float32 and cast back"), std::string::npos) << msg;
}

// A uint16 tensor has no Spyre dtype: the first directive that lays it out in sticks refuses it,
// naming the Func, the type and the fix.
TEST(SpyreCompileErrors, AUint16TensorNamesTheTypeAndTheFix) {
    set_compiling_for_spyre(true);
    ImageParam A(UInt(16), 2, "u16_A");
    Func out("u16_out");
    Var x("x"), y("y"), core("core"), yi("yi");
    Func as = A.in();
    out(x, y) = as(x, y);
    constrain_tensor(A, {64, 32});
    OutputImageParam ob = out.output_buffer();
    constrain_tensor(ob, {64, 32});
    out.split(y, core, yi, 1).parallel(core);
    std::string msg;
    try {
        stick_vectorize(out, x);
        stage_in_scratchpad(as, out, core);
        msg = spyre_compile_error_of(out, "u16");
    } catch (const Halide::CompileError &e) {
        msg = e.what();
    }
    set_compiling_for_spyre(false);
    EXPECT_NE(msg.find("Func 'u16_out'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("the type uint16 has no stick layout on Spyre"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cast it to int32 (every uint16 value fits"), std::string::npos) << msg;
}

// matmul_on_pt of int8 operands into a float32 accumulator: the PT multiplies int8 into
// int32 only; the error names the Func and says to accumulate in int32.
TEST(SpyreCompileErrors, MatmulOnPtOfInt8OperandsIntoFloat32NamesTheInt32Accumulator) {
    set_compiling_for_spyre(true);
    ImageParam A(Int(8), 2, "i8f_A"), B(Int(8), 2, "i8f_B");
    Func acc("i8f_acc");
    Var n("n"), m("m");
    RDom k(0, 128, "k");
    acc(n, m) = 0.0f;
    acc(n, m) += cast<float>(A(k, m)) * cast<float>(B(n, k));
    std::string msg;
    try {
        matmul_on_pt(acc, k.x, n, m);
    } catch (const Halide::CompileError &e) {
        msg = e.what();
    }
    set_compiling_for_spyre(false);
    EXPECT_NE(msg.find("i8f_acc"), std::string::npos) << msg;
    EXPECT_NE(msg.find("accumulate in int32"), std::string::npos) << msg;
    EXPECT_NE(msg.find("i32(A(k, m)) * i32(B(n, k))"), std::string::npos) << msg;
}

// sumsq(y) += h(r, y) * h(r, y): a scalar SFU loop per element (no row sum), said once on
// stderr. Staging sq = h * h first makes it one sfu.rowsum per row, with no warning.
struct SumOfSquares {
    ImageParam in;
    Func sq, sumsq, res, out;
    Var x{"x"}, y{"y"}, core{"core"}, yi{"yi"};
    SumOfSquares(const std::string &n, bool stage_square)
        : in(Float(32), 2, n + "_in"), sq(n + "_sq"), sumsq(n + "_sumsq"), res(n + "_res"), out(n + "_out") {
        set_compiling_for_spyre(true);
        RDom r(0, 64, "r");
        Func h = in.in();
        sq(x, y) = h(x, y) * h(x, y);
        sumsq(y) = 0.0f;
        if (stage_square) sumsq(y) += sq(r, y);
        else sumsq(y) += h(r, y) * h(r, y);
        res(x, y) = h(x, y) * sumsq(y);
        out(x, y) = res(x, y);
        constrain_tensor(in, {64, 32});
        OutputImageParam ob = out.output_buffer();
        constrain_tensor(ob, {64, 32});
        out.split(y, core, yi, 1).parallel(core);
        stick_vectorize(out, x);
        stage_in_scratchpad(h, out, core);
        if (stage_square) stage_in_scratchpad(sq, out, core);
        sumsq.compute_at(out, core).store_in(MemoryType::VTCM);
        stage_in_scratchpad(res, out, core);
    }
    // Compiles and runs; returns what the compiler printed on stderr.
    std::string run_and_check(const std::string &kernel) {
        Buffer<float> a(64, 32, in.name());
        a.for_each_element([&](int i, int j) { a(i, j) = (float)((i * 3 + j * 7) % 13) / 8.0f - 0.75f; });
        in.set(a);
        SpyreLoweringOptions o;
        o.kernel_name = kernel;
        o.output_dir = ::testing::TempDir();
        attach_spyre_lowering(out, o);
        Buffer<float> r(64, 32);
        ::testing::internal::CaptureStderr();
        realize_for_spyre(out, r);
        const std::string err = ::testing::internal::GetCapturedStderr();
        for (int j = 0; j < 32; j++) {
            double ss = 0;
            for (int i = 0; i < 64; i++) ss += (double)a(i, j) * a(i, j);
            for (int i = 0; i < 64; i++) {
                EXPECT_NEAR(r(i, j), a(i, j) * ss, 1e-4 * (1 + std::fabs(a(i, j) * ss))) << i << "," << j;
            }
        }
        return err;
    }
};

std::string program_text(const std::string &kernel) {
    std::ifstream f(::testing::TempDir() + "/" + kernel + ".spyre.txt");
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

int occurrences(const std::string &text, const std::string &what) {
    int n = 0;
    for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) n++;
    return n;
}

TEST(SpyreCompileWarnings, AReductionOfAnUnstagedTermWarnsOnceNamingTheFuncAndTheFix) {
    SumOfSquares k("ssw", /*stage_square=*/false);
    const std::string err = k.run_and_check("ssw");
    EXPECT_EQ(occurrences(err, "Spyre: warning:"), 1) << err;  // once, not once per core
    EXPECT_NE(err.find("in Func 'ssw_sumsq', loop 'ssw_sumsq.s1.r$x'"), std::string::npos) << err;
    EXPECT_NE(err.find("one element at a time, a loop of 64 scalar SFU steps per row"), std::string::npos) << err;
    EXPECT_NE(err.find("compute the term in its own Func first"), std::string::npos) << err;
    EXPECT_EQ(occurrences(program_text("ssw"), "sfu.rowsum"), 0);
}

TEST(SpyreCompileWarnings, AReductionOfAStagedTermIsOneRowSumAndNoWarning) {
    SumOfSquares k("sss", /*stage_square=*/true);
    const std::string err = k.run_and_check("sss");
    EXPECT_EQ(err.find("Spyre: warning:"), std::string::npos) << err;
    const std::string text = program_text("sss");
    EXPECT_EQ(occurrences(text, "sfu.rowsum"), 32) << text;  // one per core: its one row
}

// A value read twice in one definition (Halide CSEs it into a vector let) compiles.
TEST(SpyreCompile, AValueReadTwiceInOneDefinitionMatchesTheAlgorithm) {
    set_compiling_for_spyre(true);
    ImageParam in(Float(32), 2, "twice_in");
    Func compute("twice_compute"), out("twice_out");
    Var x("x"), y("y"), core("core"), yi("yi");
    Func st = in.in();
    compute(x, y) = st(x, y) * st(x, y) + st(x, y);
    out(x, y) = compute(x, y);
    constrain_tensor(in, {64, 32});
    OutputImageParam ob = out.output_buffer();
    constrain_tensor(ob, {64, 32});
    out.split(y, core, yi, 1).parallel(core);
    stick_vectorize(out, x);
    stage_in_scratchpad(st, out, core);
    stage_in_scratchpad(compute, out, core);
    Buffer<float> a(64, 32, in.name());
    a.for_each_element([&](int i, int j) { a(i, j) = (float)((i * 7 + j * 13) % 11) / 4.0f - 1.5f; });
    in.set(a);
    SpyreLoweringOptions o;
    o.kernel_name = "twice";
    o.output_dir = ::testing::TempDir();
    attach_spyre_lowering(out, o);
    Buffer<float> r(64, 32);
    realize_for_spyre(out, r);
    for (int j = 0; j < 32; j++)
        for (int i = 0; i < 64; i++) ASSERT_EQ(r(i, j), a(i, j) * a(i, j) + a(i, j)) << i << "," << j;
    // The let is a plain read of st's row, which the definition does not write:
    // the SFU reads it in place, a mul and an add per core and no copy.
    const std::string text = program_text("twice");
    EXPECT_EQ(occurrences(text, "sfu.copy"), 0) << text;
    EXPECT_EQ(occurrences(text, "sfu.mul"), 32) << text;
    EXPECT_EQ(occurrences(text, "sfu.add"), 32) << text;
}

// Reads at element offsets: out(x, y) = st(x, y) + st(x + 1, y) + st(x + 32, y). The staged
// tile [0, 97) starts on a stick and is rounded up to whole sticks; the SFU reads the
// shifted vectors inside the scratchpad.
TEST(SpyreCompile, ReadsOfAStagedTileAtElementOffsetsMatchTheAlgorithm) {
    set_compiling_for_spyre(true);
    ImageParam in(Float(32), 2, "offs_in");
    Func sum("offs_sum"), out("offs_out");
    Var x("x"), y("y"), core("core"), yi("yi");
    Func st = in.in();
    sum(x, y) = st(x, y) + st(x + 1, y) + st(x + 32, y);
    out(x, y) = sum(x, y);
    constrain_tensor(in, {128, 32});
    OutputImageParam ob = out.output_buffer();
    constrain_tensor(ob, {64, 32});
    out.split(y, core, yi, 1).parallel(core);
    stick_vectorize(out, x);
    stage_in_scratchpad(st, out, core);
    stage_in_scratchpad(sum, out, core);
    Buffer<float> a(128, 32, in.name());
    a.for_each_element([&](int i, int j) { a(i, j) = (float)((i * 7 + j * 3) % 19) - 9.0f; });
    in.set(a);
    SpyreLoweringOptions o;
    o.kernel_name = "offs";
    attach_spyre_lowering(out, o);
    Buffer<float> r(64, 32);
    realize_for_spyre(out, r);
    for (int j = 0; j < 32; j++)
        for (int i = 0; i < 64; i++) ASSERT_EQ(r(i, j), a(i, j) + a(i + 1, j) + a(i + 32, j)) << i << "," << j;
}

// A column sum of an f16 input split across 32 cores with rfactor (docs/compiler.md,
// distributed regions), the input staged at the intermediate's core loop c. With the
// intermediate's update left in Halide's order the staged tile is not dense; reordered
// with u innermost it compiles and matches the algorithm.
struct RfactorColumnSum {
    ImageParam in;
    Func acc, res, out, wide, part, gathered;
    Var u{"u"}, c{"c"}, uo{"uo"}, ui{"ui"}, x{"x"}, y{"y"};
    RfactorColumnSum(const std::string &n, bool reorder_intermediate)
        : in(Float(16), 2, n + "_in"), acc(n + "_acc"), res(n + "_res"), out(n + "_out"), wide(n + "_wide") {
        set_compiling_for_spyre(true);
        RDom r(0, 1024, "r");
        RVar rc("rc"), rr("rr");
        Func staged = in.in();
        wide(x, y) = cast<float>(staged(x, y));
        acc(u) = 0.0f;
        acc(u) += wide(u, r);
        res(u) = cast<float16_t>(acc(u));
        out(u) = res(u);
        constrain_tensor(in, {128, 1024});
        OutputImageParam ob = out.output_buffer();
        constrain_tensor(ob, {128});
        out.split(u, uo, ui, 128, TailStrategy::RoundUp).vectorize(ui, 64);
        res.compute_at(out, uo).store_in(MemoryType::VTCM).vectorize(u, 64, TailStrategy::RoundUp);
        acc.compute_at(out, uo).store_in(MemoryType::VTCM).vectorize(u, 32);
        acc.update().split(r.x, rc, rr, 32);
        part = acc.update().rfactor(rc, c);
        acc.update().reorder(u, rc).vectorize(u, 32);
        gathered = part.in(acc);
        gathered.compute_root().store_in(MemoryType::VTCM).reorder(u, c).parallel(c).vectorize(u, 32);
        part.compute_at(gathered, c).store_in(MemoryType::VTCM).vectorize(u, 32);
        if (reorder_intermediate) part.update().reorder(u, rr, c).vectorize(u, 32);
        else part.update().vectorize(u, 32);
        stage_in_scratchpad(staged, part, c);
        stage_in_scratchpad(wide, part, c);
    }
};

TEST(SpyreCompileErrors, StagingInAnRfactorIntermediateNamesItAndTheReorder) {
    RfactorColumnSum k("rfx", /*reorder_intermediate=*/false);
    const std::string msg = spyre_compile_error_of(k.out, "rfx");
    EXPECT_NE(msg.find("in Func 'rfx_in.in()'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("this runs inside 'rfx_acc_intm', the rfactor intermediate of 'rfx_acc'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("part.update().reorder(u, rr, c)"), std::string::npos) << msg;
}

TEST(SpyreCompile, StagingInAReorderedRfactorIntermediateMatchesTheAlgorithm) {
    RfactorColumnSum k("rfo", /*reorder_intermediate=*/true);
    Buffer<float16_t> a(128, 1024, k.in.name());
    a.for_each_element([&](int i, int j) { a(i, j) = float16_t((float)((i * 5 + j * 3) % 9) / 8.0f - 0.5f); });
    k.in.set(a);
    SpyreLoweringOptions o;
    o.kernel_name = "rfo";
    attach_spyre_lowering(k.out, o);
    Buffer<float16_t> r(128);
    realize_for_spyre(k.out, r);
    for (int i = 0; i < 128; i++) {
        double expected = 0;
        for (int j = 0; j < 1024; j++) expected += (float)a(i, j);
        ASSERT_NEAR((float)r(i), expected, 0.01 * std::max(1.0, std::fabs(expected))) << i;
    }
}

// The compile error of out(x, y) = in(x / x_div, y / y_div) on a 128 x 64 output, the input
// declared `in_extents`, both staged per core (two rows each).
std::string upsample_error(const std::string &prefix, int x_div, int y_div, std::vector<int> in_extents) {
    set_compiling_for_spyre(true);
    ImageParam A(Float(32), 2, prefix + "_A");
    Func up(prefix + "_f"), out(prefix + "_out");
    Var x("x"), y("y"), core("core"), yi("yi");
    Func as = A.in();
    up(x, y) = as(x / x_div, y / y_div);
    out(x, y) = up(x, y);
    constrain_tensor(A, in_extents);
    OutputImageParam ob = out.output_buffer();
    constrain_tensor(ob, {128, 64});
    out.split(y, core, yi, 2).parallel(core);
    stick_vectorize(out, x);
    stage_in_scratchpad(as, out, core);
    stage_in_scratchpad(up, out, core);
    return spyre_compile_error_of(out, prefix);
}

// Upsampling along the stick dimension (in(x / 2, y)) is refused saying what the machine lacks,
// not with a fix that does not apply; along rows (in(x, y / 2)) it compiles and matches the host.
TEST(SpyreCompileErrors, UpsamplingAlongTheStickDimensionSaysItIsUnsupportedAndWhy) {
    for (int y_div : {1, 2}) {
        const std::string msg = upsample_error("up", 2, y_div, {64, 64 / y_div});
        EXPECT_NE(msg.find("in Func 'up_f'"), std::string::npos) << msg;
        EXPECT_NE(msg.find("upsampling along the stick dimension"), std::string::npos) << msg;
        EXPECT_NE(msg.find("in(x, y / 2) compiles"), std::string::npos) << msg;
        EXPECT_EQ(msg.find("vectorize the stick dimension of every Func"), std::string::npos) << msg;
    }
}

// An algorithm that reads an input past its declared extent would read out of bounds on every
// call (the shapes are static): refused at compile time naming the tensor, the dimension, the
// elements read and the extent, never left to the dry run's "please report it".
TEST(SpyreCompileErrors, AReadPastAnInputsExtentIsRefusedNamingTheTensorAndTheElements) {
    const std::string msg = upsample_error("past", 1, 2, {64, 32});  // the algorithm reads 128 columns of it
    EXPECT_NE(msg.find("reads the input 'past_A' in dimension 0 from element 0 to 127, but its extent there is 64"),
              std::string::npos)
        << msg;
    EXPECT_EQ(msg.find("please report"), std::string::npos) << msg;
}

// A staged Func vectorized along the wrong dimension keeps the advice that fixes it, even where
// the loop's base holds a min (a ShiftInwards split): that is not a boundary condition.
TEST(SpyreCompileErrors, AFuncVectorizedAlongTheWrongDimensionIsToldToVectorizeTheStickDimension) {
    set_compiling_for_spyre(true);
    ImageParam A(Float(32), 2, "wrongdim_A");
    Func f("wrongdim_f"), out("wrongdim_out");
    Var x("x"), y("y"), core("core"), yi("yi");
    Func as = A.in();
    f(x, y) = as(x, y) * 2.0f;
    out(x, y) = f(x, y);
    constrain_tensor(A, {64, 64});
    OutputImageParam ob = out.output_buffer();
    constrain_tensor(ob, {64, 64});
    out.split(y, core, yi, 3, TailStrategy::ShiftInwards).parallel(core);
    stick_vectorize(out, x);
    stage_in_scratchpad(as, out, core);
    f.compute_at(out, core).store_in(MemoryType::VTCM).reorder(y, x).vectorize(y, 32, TailStrategy::RoundUp);
    const std::string msg = spyre_compile_error_of(out, "wrongdim");
    EXPECT_NE(msg.find("vectorize the stick dimension"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("boundary"), std::string::npos) << msg;
}

TEST(UpsampleDualRealization, RowsRepeatedAlongTheOtherDimensionMatchTheHost) {
    ImageParam A(Float(32), 2, "uprows_A");
    Var x("x"), y("y"), core("core"), yi("yi");
    Halide::Buffer<> in = random_buffer("uprows_A", Float(32), {64, 16}, 23);
    auto build = [&](bool spyre) {
        set_compiling_for_spyre(spyre);
        Func up("uprows_f"), out("uprows_out");
        Func as = A.in();
        up(x, y) = as(x, y / 2) * 2.0f;
        out(x, y) = up(x, y);
        constrain_tensor(A, {64, 16});
        OutputImageParam ob = out.output_buffer();
        constrain_tensor(ob, {64, 32});
        if (spyre) {
            out.split(y, core, yi, 2).parallel(core);
            stick_vectorize(out, x);
            stage_in_scratchpad(as, out, core);
            stage_in_scratchpad(up, out, core);
            SpyreLoweringOptions o;
            o.kernel_name = "uprows";
            attach_spyre_lowering(out, o);
        }
        A.set(in);
        Halide::Buffer<float> result(64, 32);
        out.realize(result, spyre ? Halide::Target("x86-64-linux") : Halide::get_host_target());
        set_compiling_for_spyre(false);
        return result;
    };
    Halide::Buffer<float> host = build(false), spyre = build(true);
    int wrong = 0;
    for (int y = 0; y < 32; y++)
        for (int x = 0; x < 64; x++) {
            wrong += spyre(x, y) != host(x, y);
            EXPECT_EQ(host(x, y), in.as<float>()(x, y / 2) * 2.0f);
        }
    EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace spyre::testing
