// spyre::double_buffer: a staged input in two scratchpad copies, the staging
// loop unrolled by two and the next tile's DMA issued before this tile's
// compute. Same results as single buffering, in every synchronization mode,
// and faster when DMA and compute can overlap.
#include <gtest/gtest.h>

#include <cstdlib>

#include "jit_helpers.h"
#include "spyre/spyre_runtime.h"
#include "spyre_lowering.h"
#include "spyre_schedule.h"

namespace spyre::testing {
namespace {

using namespace Halide;

// out(x, y) = tanh(in(x, y)) * 0.5 + in(x, y): rows of 512 f32, one row per
// tile, 8 tiles per core on 32 cores.
struct Pipeline {
    ImageParam in;
    Func staged, compute{"db_compute"}, out{"db_out"};
    Var x{"x"}, y{"y"}, core{"core"}, yr{"yr"}, yo{"yo"}, yi{"yi"};
    static constexpr int W = 512, H = 256;

    Pipeline(const std::string &name, bool double_buffered) : in(Float(32), 2, name) {
        set_compiling_for_spyre(true);
        compute(x, y) = tanh(in(x, y)) * 0.5f + in(x, y);
        out(x, y) = compute(x, y);
        constrain_tensor(in, {W, H});
        OutputImageParam ob = out.output_buffer();
        constrain_tensor(ob, {W, H});
        out.split(y, core, yr, H / 32).split(yr, yo, yi, 1).parallel(core).vectorize(x, W);
        staged = in.in();
        if (double_buffered) {
            double_buffer(staged, out, yo);
        } else {
            stage_in_scratchpad(staged, out, yo);
        }
        compute.compute_at(out, yo).store_in(MemoryType::VTCM).vectorize(x, W);
    }

    Buffer<float> run(const std::string &kernel, double *simulated_us) {
        Buffer<float> input(W, H, in.name());
        for (int j = 0; j < H; j++)
            for (int i = 0; i < W; i++) input(i, j) = (float)((i * 37 + j * 11) % 97) / 24.0f - 2.0f;
        in.set(input);
        SpyreLoweringOptions o;
        o.kernel_name = kernel;
        attach_spyre_lowering(out, o);
        Buffer<float> r = out.realize({W, H}, Target("x86-64-linux"));
        set_compiling_for_spyre(false);
        spyre_kernel_stats st;
        EXPECT_EQ(spyre_get_last_run_stats(&st), 0);
        *simulated_us = st.simulated_us;
        return r;
    }
};

TEST(DoubleBuffer, SameResultsAndFasterThanSingleBuffering) {
    double single_us = 0, double_us = 0;
    Pipeline single("db_in_single", false);
    Buffer<float> a = single.run("db_single", &single_us);
    Pipeline twice("db_in_double", true);
    Buffer<float> b = twice.run("db_double", &double_us);
    int distinct = 0;
    for (int j = 0; j < Pipeline::H; j++)
        for (int i = 0; i < Pipeline::W; i++) {
            ASSERT_EQ(a(i, j), b(i, j)) << i << "," << j;
            if (b(i, j) != b(0, 0)) distinct++;
        }
    EXPECT_GT(distinct, 0);
    EXPECT_LT(double_us, single_us * 0.95) << "double buffering did not overlap DMA and compute: " << double_us
                                           << " us vs " << single_us << " us";
}

TEST(DoubleBuffer, ResultsDoNotDependOnSynchronizationTiming) {
    double us = 0;
    Pipeline ref("db_in_ref", true);
    Buffer<float> expected = ref.run("db_ref", &us);
    for (const char *mode : {"serial", "random"}) {
        setenv("SPYRE_SYNC", mode, 1);
        Pipeline p(std::string("db_in_") + mode, true);
        Buffer<float> got = p.run(std::string("db_") + mode, &us);
        unsetenv("SPYRE_SYNC");
        for (int j = 0; j < Pipeline::H; j++)
            for (int i = 0; i < Pipeline::W; i++) ASSERT_EQ(got(i, j), expected(i, j)) << mode << " " << i << "," << j;
    }
}

}  // namespace
}  // namespace spyre::testing
