// The Spyre backend's compile-time rules: one small pipeline per rule, each
// error checked for the Func, the loop and the rule it names. The first test
// is the same pipeline scheduled legally, run against a host evaluation, so
// the negative tests differ from a working kernel in one respect each.
#include <gtest/gtest.h>

#include "jit_helpers.h"
#include "spyre_lowering.h"

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

}  // namespace
}  // namespace spyre::testing
