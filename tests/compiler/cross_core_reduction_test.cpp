// Reductions split across the cores: each core reduces its share of the rows
// into its slice of a scratchpad buffer allocated outside the core loop (a
// distributed buffer); after the core loop the slices are gathered over the
// ring into core 0, which combines them and stores the result
// (target/selection/device_region.h, distributed regions).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "jit_helpers.h"
#include "spyre/spyre_runtime.h"
#include "spyre_lowering.h"
#include "spyre_schedule.h"

namespace spyre::testing {
namespace {

using namespace Halide;

// out(x) = sum over y of in(x, y) for a 64 x 4096 f32 input: too few outputs (2 sticks) to
// split across cores, so the 4096 rows are: 128 per core, then combined.
struct ColumnSum {
    static constexpr int X = 64, Y = 4096;
    ImageParam in;
    Func staged, partial, gathered, total, out;
    Var x{"x"}, u{"u"};

    // nested: the core loop inside a loop over the two sticks of x (which the backend refuses).
    ColumnSum(const std::string &name, int cores, bool nested = false)
        : in(Float(32), 2, name + "_in"), partial(name + "_partial"), gathered(name + "_gathered"),
          total(name + "_total"), out(name + "_out") {
        set_compiling_for_spyre(true);
        const int rows = Y / cores;
        RDom ri(0, rows, "ri"), rc(0, cores, "rc");
        staged = in.in();
        partial(x, u) = 0.0f;
        partial(x, u) += staged(x, u * rows + ri);
        gathered(x, u) = partial(x, u);
        total(x) = 0.0f;
        total(x) += gathered(x, rc);
        out(x) = total(x);
        constrain_tensor(in, {X, Y});
        OutputImageParam ob = out.output_buffer();
        constrain_tensor(ob, {X});
        // The distributed buffer: one slice per core, the core loop over u.
        if (nested) {
            Var xo("xo"), xi("xi");
            gathered.compute_root().store_in(MemoryType::VTCM).split(x, xo, xi, 32).reorder(xi, u, xo).parallel(u)
                .vectorize(xi);
        } else {
            gathered.compute_root().store_in(MemoryType::VTCM).parallel(u).vectorize(x, 32);
        }
        partial.compute_at(gathered, u).store_in(MemoryType::VTCM).vectorize(x, 32);
        partial.update().vectorize(x, 32);
        staged.compute_at(gathered, u).store_in(MemoryType::VTCM).vectorize(staged.args()[0], 32);
        // The combine, on core 0 after the gather.
        total.compute_root().store_in(MemoryType::VTCM).vectorize(x, 32);
        total.update().vectorize(x, 32);
        out.vectorize(x, 32);
    }

    Buffer<float> run(const std::string &kernel, spyre_kernel_stats *stats) {
        Buffer<float> input(X, Y, in.name());
        input.for_each_element([&](int i, int j) { input(i, j) = (float)((i * 13 + j * 7) % 29) / 16.0f - 0.5f; });
        in.set(input);
        SpyreLoweringOptions o;
        o.kernel_name = kernel;
        o.output_dir = ::testing::TempDir();
        attach_spyre_lowering(out, o);
        Buffer<float> r(X);
        realize_for_spyre(out, r);
        if (stats) {
            EXPECT_EQ(spyre_get_last_run_stats(stats), 0);
        }
        return r;
    }
};

TEST(CrossCoreReduction, ColumnSumOverThirtyTwoCoresMatchesTheHost) {
    ColumnSum k("xc", 32);
    spyre_kernel_stats st{};
    const Buffer<float> r = k.run("xc", &st);
    for (int i = 0; i < ColumnSum::X; i++) {
        double expected = 0;
        for (int j = 0; j < ColumnSum::Y; j++) expected += (float)((i * 13 + j * 7) % 29) / 16.0f - 0.5f;
        ASSERT_NEAR(r(i), expected, 1e-3 * std::max(1.0, std::fabs(expected))) << i;
    }
}

TEST(CrossCoreReduction, ResultsDoNotDependOnSynchronizationTiming) {
    ColumnSum ref("xc_ref", 32);
    const Buffer<float> expected = ref.run("xc_ref", nullptr);
    for (const char *mode : {"serial", "random"}) {
        setenv("SPYRE_SYNC", mode, 1);
        ColumnSum k(std::string("xc_") + mode, 32);
        const Buffer<float> got = k.run(std::string("xc_") + mode, nullptr);
        unsetenv("SPYRE_SYNC");
        for (int i = 0; i < ColumnSum::X; i++) ASSERT_EQ(got(i), expected(i)) << mode << " " << i;
    }
}

TEST(CrossCoreReduction, EachCoreSendsItsPartToCoreZeroOverTheRing) {
    ColumnSum k("xc_ring", 8);
    spyre_kernel_stats st{};
    (void)k.run("xc_ring", &st);
    std::ifstream f(::testing::TempDir() + "/xc_ring.spyre.txt");
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string text = ss.str();
    // Cores 1..7 each put their 256-byte part (64 f32) into core 0, which waits for all 7.
    int puts = 0, waits_core0 = 0;
    size_t pos = 0;
    while ((pos = text.find("ring.put dst_core=0", pos)) != std::string::npos) {
        puts++;
        EXPECT_NE(text.find("bytes=256", pos), std::string::npos);
        pos++;
    }
    const size_t core0 = text.find(".core 0"), core1 = text.find(".core 1");
    for (pos = text.find("wait channel=15", core0); pos != std::string::npos && pos < core1; pos = text.find("wait channel=15", pos + 1)) {
        waits_core0++;
    }
    EXPECT_EQ(puts, 7) << text;
    EXPECT_EQ(waits_core0, 7) << text;
}

TEST(CrossCoreReduction, ACoreLoopThatProducesNothingTheOutputNeedsIsAnError) {
    // The core loop fills a heap buffer (not the scratchpad) that the output reads afterwards.
    set_compiling_for_spyre(true);
    ImageParam in(Float(32), 2, "xc_bad_in");
    Func staged = in.in(), part("xc_bad_part"), out("xc_bad_out");
    Var x("x"), u("u");
    part(x, u) = staged(x, u);
    out(x) = part(x, 0) + part(x, 1);
    constrain_tensor(in, {64, 2});
    OutputImageParam ob = out.output_buffer();
    constrain_tensor(ob, {64});
    part.compute_root().parallel(u).vectorize(x, 32);
    staged.compute_at(part, u).store_in(MemoryType::VTCM).vectorize(staged.args()[0], 32);
    out.vectorize(x, 32);
    const std::string msg = spyre_compile_error(out, "xc_bad");
    EXPECT_NE(msg.find("does not produce the output 'xc_bad_out'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("compute_root().store_in(MemoryType::VTCM)"), std::string::npos) << msg;
}

TEST(CrossCoreReduction, ACoreLoopInsideAnotherLoopIsAnError) {
    // The parts' columns in two tiles, the core loop inside the tile loop: each core would write
    // part of its slice per tile, and one gather after the loop cannot follow that.
    ColumnSum k("xc_nested", 8, /*nested=*/true);
    const std::string msg = spyre_compile_error(k.out, "xc_nested");
    EXPECT_NE(msg.find("is inside another loop of the region"), std::string::npos) << msg;
}

TEST(CrossCoreReduction, ABufferInitializedBeforeTheCoreLoopIsAnError) {
    // gathered = 0 on every core before the core loop, then each core adds its rows: the zeros
    // written by core 0 would race with the other cores' arriving parts.
    set_compiling_for_spyre(true);
    ImageParam in(Float(32), 2, "xc_init_in");
    Func staged = in.in(), gathered("xc_init_gathered"), total("xc_init_total"), out("xc_init_out");
    Var x("x"), u("u");
    RDom ri(0, 4, "ri"), rc(0, 8, "rc");
    gathered(x, u) = 0.0f;
    gathered(x, u) += staged(x, u * 4 + ri);
    total(x) = 0.0f;
    total(x) += gathered(x, rc);
    out(x) = total(x);
    constrain_tensor(in, {64, 32});
    OutputImageParam ob = out.output_buffer();
    constrain_tensor(ob, {64});
    gathered.compute_root().store_in(MemoryType::VTCM).vectorize(x, 32);
    gathered.update().reorder(x, ri, u).parallel(u).vectorize(x, 32);
    staged.compute_at(gathered, u).store_in(MemoryType::VTCM).vectorize(staged.args()[0], 32);
    total.compute_root().store_in(MemoryType::VTCM).vectorize(x, 32);
    total.update().vectorize(x, 32);
    out.vectorize(x, 32);
    const std::string msg = spyre_compile_error(out, "xc_init");
    EXPECT_NE(msg.find("is written before the core loop"), std::string::npos) << msg;
    EXPECT_NE(msg.find("initialize it inside the core loop"), std::string::npos) << msg;
}

}  // namespace
}  // namespace spyre::testing
