// Overlapping staged tiles (target/program_tree/tile_overlap_reuse.h): a vertical 3-tap
// stencil stages three input rows per output row, and consecutive tiles share
// two of them. Double-buffered, each tile copies the shared rows from the
// other copy and loads only its new row: the same results as the single-
// buffered schedule (which loads every tile whole), in every synchronization
// mode, with each core reading its input rows from DRAM once; also where the
// tile is a strip of a wider image (rows of their own runs, moved by a row).
#include <gtest/gtest.h>

#include <cstdlib>

#include "jit_helpers.h"
#include "spyre/spyre_runtime.h"
#include "spyre_lowering.h"
#include "spyre_schedule.h"

namespace spyre::testing {
namespace {

using namespace Halide;

// out(x, y) = in(x, y) + 2 in(x, y + 1) - in(x, y + 2): rows of 512 f32 (16
// sticks), H output rows over 32 cores, one output row per tile. With `strip`,
// the input rows are twice as wide, so a tile's three rows are three runs.
struct Stencil {
    ImageParam in;
    Func staged, compute{"overlap_compute"}, out{"overlap_out"};
    Var x{"x"}, y{"y"}, core{"core"}, yr{"yr"}, yo{"yo"}, yi{"yi"};
    static constexpr int W = 512, H = 256, kRowsPerCore = H / 32;
    const int in_width;

    Stencil(const std::string &name, bool double_buffered, bool strip = false)
        : in(Float(32), 2, name), in_width(strip ? 2 * W : W) {
        set_compiling_for_spyre(true);
        staged = in.in();
        compute(x, y) = staged(x, y) + 2.0f * staged(x, y + 1) - staged(x, y + 2);
        out(x, y) = compute(x, y);
        constrain_tensor(in, {in_width, H + 2});
        OutputImageParam ob = out.output_buffer();
        constrain_tensor(ob, {W, H});
        out.split(y, core, yr, kRowsPerCore).split(yr, yo, yi, 1).parallel(core).vectorize(x, W);
        stage_in_scratchpad(staged, out, yo, double_buffered);
        compute.compute_at(out, yo).store_in(MemoryType::VTCM).vectorize(x, W);
    }

    Buffer<float> run(const std::string &kernel, spyre_kernel_stats *stats) {
        Buffer<float> input(in_width, H + 2, in.name());
        for (int j = 0; j < H + 2; j++)
            for (int i = 0; i < in_width; i++) input(i, j) = (float)((i * 37 + j * 11) % 97) / 24.0f - 2.0f;
        in.set(input);
        SpyreLoweringOptions o;
        o.kernel_name = kernel;
        attach_spyre_lowering(out, o);
        Buffer<float> r = out.realize({W, H}, Target("x86-64-linux"));
        set_compiling_for_spyre(false);
        EXPECT_EQ(spyre_get_last_run_stats(stats), 0);
        return r;
    }
};

TEST(TileOverlapReuse, OverlappingTilesReadEachInputRowOncePerCoreWithTheSameResults) {
    spyre_kernel_stats whole{}, reused{};
    Stencil single("overlap_in_single", false);
    Buffer<float> a = single.run("overlap_single", &whole);
    Stencil twice("overlap_in_double", true);
    Buffer<float> b = twice.run("overlap_double", &reused);
    expect_equal_and_varied(a, b);
    const uint64_t row = Stencil::W * sizeof(float);
    // Whole tiles: three rows per output row. Reused: a core's first tile whole, then one row per tile.
    EXPECT_EQ(whole.dram_read_bytes, 32u * Stencil::kRowsPerCore * 3u * row);
    EXPECT_EQ(reused.dram_read_bytes, 32u * (Stencil::kRowsPerCore + 2u) * row);
}

TEST(TileOverlapReuse, AStripOfAWiderImageReadsEachOfItsRowsOncePerCore) {
    spyre_kernel_stats whole{}, reused{};
    Stencil single("overlap_strip_in_single", false, true);
    Buffer<float> a = single.run("overlap_strip_single", &whole);
    Stencil twice("overlap_strip_in_double", true, true);
    Buffer<float> b = twice.run("overlap_strip_double", &reused);
    expect_equal_and_varied(a, b);
    const uint64_t row = Stencil::W * sizeof(float);  // the strip's part of an input row
    EXPECT_EQ(whole.dram_read_bytes, 32u * Stencil::kRowsPerCore * 3u * row);
    EXPECT_EQ(reused.dram_read_bytes, 32u * (Stencil::kRowsPerCore + 2u) * row);
}

TEST(TileOverlapReuse, ResultsDoNotDependOnSynchronizationTiming) {
    spyre_kernel_stats st{};
    Stencil ref("overlap_in_ref", true);
    Buffer<float> expected = ref.run("overlap_ref", &st);
    for (bool strip : {false, true}) {
        for (const char *mode : {"serial", "random"}) {
            setenv("SPYRE_SYNC", mode, 1);
            const std::string n = std::string(mode) + (strip ? "_strip" : "");
            Stencil p("overlap_in_" + n, true, strip);
            Buffer<float> got = p.run("overlap_" + n, &st);
            unsetenv("SPYRE_SYNC");
            expect_equal_and_varied(expected, got);
        }
    }
}

}  // namespace
}  // namespace spyre::testing
