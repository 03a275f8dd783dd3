// gen_transpose built for Spyre against its host build on random data, 2-D
// and batched, over shapes that are not multiples of a stick, a tile or the
// core count. A transpose moves values without arithmetic: results are exact.
#include <gtest/gtest.h>

#include "jit_helpers.h"
#include "transpose_schedule.h"

namespace spyre::testing {
namespace {

struct TransposeCase {
    int x, y, batch;  // batch 0: 2-D tensors
    const char *dtype;
};

class TransposeDualRealization : public ::testing::TestWithParam<TransposeCase> {};

TEST_P(TransposeDualRealization, SpyreMatchesHostExactly) {
    const TransposeCase c = GetParam();
    const Halide::Type t = std::string(c.dtype) == "float16" ? Halide::Float(16) : Halide::Float(32);
    const bool batched = c.batch > 0;
    const int nb = std::max(1, c.batch);
    std::vector<int> in_ext = {c.x, c.y}, out_ext = {c.y, c.x};
    if (batched) {
        in_ext.push_back(c.batch);
        out_ext.push_back(c.batch);
    }
    Halide::Buffer<> in = random_buffer("in", t, in_ext, 11);
    const std::map<std::string, std::string> params = {{"x", std::to_string(c.x)},
                                                       {"y", std::to_string(c.y)},
                                                       {"batch", std::to_string(c.batch)},
                                                       {"dtype", c.dtype}};
    set_compiling_for_spyre(true);
    const TransposeSpyrePlan plan = plan_transpose_spyre(c.x, c.y, c.batch, t);
    set_compiling_for_spyre(false);
    std::vector<int> padded = {plan.xp, plan.yp};
    if (batched) padded.push_back(c.batch);
    Halide::Buffer<> in_padded = padded_copy(in, padded);
    Halide::Buffer<> spyre = run_generator("transpose", params, true, t, out_ext, in_padded);
    Halide::Buffer<> host = run_generator("transpose", params, false, t, out_ext, in);

    int mismatches = 0, wrong_reference = 0, distinct = 0;
    const double first = value_at(in, 0, 0, 0);
    for (int b = 0; b < nb; b++)
        for (int x = 0; x < c.x; x++)
            for (int y = 0; y < c.y; y++) {
                const double h = value_at(host, y, x, b), s = value_at(spyre, y, x, b);
                if (h != s) mismatches++;
                if (h != value_at(in, x, y, b)) wrong_reference++;
                if (h != first) distinct++;
            }
    EXPECT_GT(distinct, 0) << "the host reference is constant: the test could pass by accident";
    EXPECT_EQ(wrong_reference, 0) << "the host build is not the transpose of the input";
    EXPECT_EQ(mismatches, 0) << "of " << (int64_t)nb * c.x * c.y << " elements";
}

INSTANTIATE_TEST_SUITE_P(Shapes, TransposeDualRealization,
                         ::testing::Values(TransposeCase{100, 70, 0, "float32"},   // ragged both ways
                                           TransposeCase{64, 64, 0, "float16"},    // one f16 tile
                                           TransposeCase{130, 45, 3, "float16"},   // batched, ragged
                                           TransposeCase{1, 33, 0, "float32"},     // a column becomes a row
                                           TransposeCase{256, 128, 2, "float32"},  // two-stick tiles, batched
                                           TransposeCase{1000, 37, 0, "float16"},  // long and thin
                                           TransposeCase{192, 320, 1, "float16"},  // batch 1, 3-D
                                           // An LLM's new key vectors (d, 1, heads) to (1, d, heads), decode at
                                           // batch 1 and 8 (8 and 64 KV heads), and a prefill's keys.
                                           TransposeCase{128, 1, 8, "float16"}, TransposeCase{128, 1, 64, "float16"},
                                           TransposeCase{128, 512, 8, "float16"}),
                         [](const auto &info) {
                             const TransposeCase &c = info.param;
                             return std::string(c.dtype) + "_" + std::to_string(c.x) + "x" + std::to_string(c.y) +
                                    "_b" + std::to_string(c.batch);
                         });

// On one core the SFU gathers would pace a transpose if each gathered one stick (an
// instruction's issue overhead per 64 elements); a gather per row of the tile leaves the
// DMA the limit: at 512 x 512 f16, tiles of 256 run in about 11.9 us against 17.2 us
// with tiles of one stick (gathers of one stick either way), and the simulator names
// DRAM, not the scratchpad (the SFU), as the bottleneck. The result stays exact.
TEST(TransposeGathers, OneGatherPerTileRowLeavesTheDmaAsTheLimit) {
    const Halide::Type t = Halide::Float(16);
    Halide::Buffer<> in = random_buffer("in", t, {512, 512}, 5);
    double us[2] = {0, 0};
    std::string bottleneck[2];
    const char *tiles[2] = {"64", "256"};
    for (int i = 0; i < 2; i++) {
        const std::map<std::string, std::string> params = {
            {"x", "512"}, {"y", "512"}, {"dtype", "float16"}, {"max_cores", "1"}, {"tile", tiles[i]}};
        Halide::Buffer<> spyre = run_generator("transpose", params, true, t, {512, 512}, in);
        spyre_kernel_stats st;
        ASSERT_EQ(spyre_get_last_run_stats(&st), 0);
        us[i] = st.simulated_us;
        bottleneck[i] = st.bottleneck;
        int mismatches = 0;
        for (int x = 0; x < 512; x++)
            for (int y = 0; y < 512; y++) mismatches += value_at(spyre, y, x, 0) != value_at(in, x, y, 0);
        EXPECT_EQ(mismatches, 0) << "tile " << tiles[i];
    }
    EXPECT_LT(us[1], us[0] * 0.8) << "tiles of 256 " << us[1] << " us, of 64 " << us[0] << " us";
    EXPECT_EQ(bottleneck[0], "scratchpad");
    EXPECT_EQ(bottleneck[1], "dram");
}

}  // namespace
}  // namespace spyre::testing
