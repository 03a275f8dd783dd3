// spyre::double_buffer: a staged input in two scratchpad copies, the staging
// loop unrolled by two and the next tile's DMA issued before this tile's
// compute. Same results as single buffering, in every synchronization mode,
// and faster when DMA and compute can overlap, for even and odd numbers of
// tiles per core (an odd count ends with one tile on the first copy).
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
// tile, `tiles_per_core` tiles per core on 32 cores.
struct Pipeline {
    ImageParam in;
    Func staged, compute{"db_compute"}, out{"db_out"};
    Var x{"x"}, y{"y"}, core{"core"}, yr{"yr"}, yo{"yo"}, yi{"yi"};
    static constexpr int W = 512;
    const int H;

    Pipeline(const std::string &name, bool double_buffered, int tiles_per_core = 8)
        : in(Float(32), 2, name), H(32 * tiles_per_core) {
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

// Same results as single buffering and at least 5% faster, with `tiles` tiles per core.
void expect_same_and_faster(int tiles) {
    double single_us = 0, double_us = 0;
    const std::string n = std::to_string(tiles);
    Pipeline single("db_in_single" + n, false, tiles);
    Buffer<float> a = single.run("db_single" + n, &single_us);
    Pipeline twice("db_in_double" + n, true, tiles);
    Buffer<float> b = twice.run("db_double" + n, &double_us);
    int distinct = 0;
    for (int j = 0; j < twice.H; j++)
        for (int i = 0; i < Pipeline::W; i++) {
            ASSERT_EQ(a(i, j), b(i, j)) << i << "," << j;
            if (b(i, j) != b(0, 0)) distinct++;
        }
    EXPECT_GT(distinct, 0);
    EXPECT_LT(double_us, single_us * 0.95) << tiles << " tiles per core: double buffering did not overlap DMA and compute: "
                                           << double_us << " us vs " << single_us << " us";
}

TEST(DoubleBuffer, SameResultsAndFasterThanSingleBuffering) { expect_same_and_faster(8); }

// An odd trip count: the pairs pipelined, the last tile on copy 0 after the loop
// (7 tiles: three pairs; 3 tiles: one pair, so its loop runs once).
TEST(DoubleBuffer, AnOddNumberOfTilesIsDoubleBufferedToo) {
    expect_same_and_faster(7);
    expect_same_and_faster(3);
}

TEST(DoubleBuffer, ResultsDoNotDependOnSynchronizationTiming) {
    for (int tiles : {8, 7}) {
        double us = 0;
        const std::string n = std::to_string(tiles);
        Pipeline ref("db_in_ref" + n, true, tiles);
        Buffer<float> expected = ref.run("db_ref" + n, &us);
        for (const char *mode : {"serial", "random"}) {
            setenv("SPYRE_SYNC", mode, 1);
            Pipeline p(std::string("db_in_") + mode + n, true, tiles);
            Buffer<float> got = p.run(std::string("db_") + mode + n, &us);
            unsetenv("SPYRE_SYNC");
            for (int j = 0; j < p.H; j++)
                for (int i = 0; i < Pipeline::W; i++)
                    ASSERT_EQ(got(i, j), expected(i, j)) << tiles << " tiles, " << mode << " " << i << "," << j;
        }
    }
}

}  // namespace
}  // namespace spyre::testing
