// The software pipeline of double-buffered loops on a real kernel: gen_bmm on
// one core with K in chunks, so the K loop is pipelined (double_buffering.h),
// the batch loop's first tiles move into the previous batch (prologue
// rotation) and each batch's C tile is stored in row pieces during the next
// batch's K loop (store_spreading.h). The program must contain those pieces
// and compute what the host build computes, in every synchronization mode.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "jit_helpers.h"
#include "spyre/spyre_runtime.h"
#include "diagnostics.h"

namespace spyre::testing {
namespace {

int count_lines_with(const std::string &text, const std::string &a, const std::string &b) {
    std::istringstream in(text);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) n += line.find(a) != std::string::npos && line.find(b) != std::string::npos;
    return n;
}

TEST(SoftwarePipeline, SpreadStoresAndRotatedLoadsComputeWhatTheHostComputes) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "spyre_software_pipeline_test";
    std::filesystem::create_directories(dir);
    const std::map<std::string, std::string> shape = {{"batch", "3"}, {"m", "64"}, {"n", "64"}, {"k", "512"},
                                                      {"dtype", "float16"}};
    std::map<std::string, std::string> knobs = shape;
    knobs.insert({{"max_cores", "1"}, {"tile_k", "64"}, {"resident_b", "false"}, {"double_buffer", "true"}});

    const Halide::Type t = Halide::Float(16);
    Halide::Buffer<> A = random_buffer("A", t, {512, 64, 3}, 41), B = random_buffer("B", t, {64, 512, 3}, 42);
    Halide::Pipeline host_p = build_generator("bmm", shape, false, A, B);
    const Halide::Buffer<> host = realize_generator(host_p, false, t, {64, 64, 3});

    DriverOptions d;
    d.function_name = "pipelined_bmm";
    d.output_dir = dir.string();
    set_driver_options(d);
    set_compiling_for_spyre(true);
    auto gen = Halide::Internal::GeneratorRegistry::create("bmm", Halide::GeneratorContext(Halide::Target("x86-64-linux")));
    Halide::Internal::GeneratorParamsMap pm;
    for (const auto &kv : knobs) pm[kv.first] = kv.second;
    gen->set_generator_param_values(pm);
    GeneratorSteps::configure(gen.get());
    gen->set_inputs(A, B);
    Halide::Pipeline p = GeneratorSteps::build(gen.get());
    set_compiling_for_spyre(false);
    const Halide::Buffer<> spyre = run_in_every_sync_mode(p, t, {64, 64, 3}, 7);
    set_driver_options(DriverOptions{});
    EXPECT_LE(max_relative_error(host, spyre), 2.0 * 9.8e-4 * std::sqrt(512.0) + 1e-6);

    std::ifstream txt(dir / "pipelined_bmm.spyre.txt");
    ASSERT_TRUE(txt) << "the lowering did not write " << (dir / "pipelined_bmm.spyre.txt");
    std::stringstream s;
    s << txt.rdbuf();
    // 8 K chunks make a 3-iteration pipelined loop. The 64 x 64 f16 C tile is one contiguous 8 KiB row;
    // batches 0 and 1 store it in 4 pieces of 2 KiB during the next batch (3 in its pipelined loop, 1 after
    // it), the last batch whole. The batch loop's last iteration follows it (prologue rotation), so the
    // piece instructions appear twice.
    EXPECT_EQ(count_lines_with(s.str(), "dma.store", "row_bytes=2048 "), 4) << s.str();
    EXPECT_EQ(count_lines_with(s.str(), "dma.store", "row_bytes=8192 "), 1) << s.str();
}

}  // namespace
}  // namespace spyre::testing
