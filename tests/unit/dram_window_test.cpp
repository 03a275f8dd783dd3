// The core's DRAM window (spyre/dram_window.h): a core addresses at most
// max_core_span_bytes of a tensor at a time, the simulator rejects a transfer
// outside the window in timing-only and functional runs alike, dma.window
// moves it (per core and argument). The compiler's pass that emits windows
// is tested in tests/compiler/dram_windows_test.cpp.
// The machines here have a 4 KiB span so small tensors exercise the rule.
#include <gtest/gtest.h>

#include "program_builder.h"
#include "spyre/simulator.h"

namespace spyre::testing {
namespace {

TEST(DramWindow, ATransferOutsideTheInitialWindowIsARuleViolationInBothModes) {
    ProgramBuilder b("past_the_span", 4096);
    const int A = b.arg("A", ArgKind::Input, DType::F32, {32, 128});  // 16 KiB: 128 rows of 128 bytes
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {32, 1});
    b.load(0, A, 8192, 0, 128);
    b.store(0, Out, 0, 0, 128);
    const HostTensor a = random_tensor("A", DType::F32, {32, 128}, 3);
    for (bool functional : {true, false}) {
        const std::string msg = simulation_failure(b, {a}, functional);
        EXPECT_NE(msg.find("core 0, dma instruction 0 (dma.load"), std::string::npos) << msg;
        EXPECT_NE(msg.find("dma.load reads bytes [8192, 8320) of 'A', outside the core's window [0, 4096) of it: a "
                           "core addresses at most max_core_span_bytes = 4096 bytes of a tensor at a time"),
                  std::string::npos)
            << msg;
    }
}

TEST(DramWindow, ATransferStraddlingTheWindowEndIsARuleViolation) {
    ProgramBuilder b("straddles", 4096);
    const int A = b.arg("A", ArgKind::Input, DType::F32, {32, 128});
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {32, 2});
    b.load(0, A, 4096 - 128, 0, 128, 2);  // bytes [3968, 4224): the last row is past the window
    b.store(0, Out, 0, 0, 128, 2);
    const std::string msg = simulation_failure(b, {random_tensor("A", DType::F32, {32, 128}, 4)}, false);
    EXPECT_NE(msg.find("dma.load reads bytes [3968, 4224) of 'A', outside the core's window [0, 4096)"),
              std::string::npos)
        << msg;
}

TEST(DramWindow, AStoreOutsideTheWindowIsARuleViolation) {
    ProgramBuilder b("store_past_the_span", 4096);
    const int A = b.arg("A", ArgKind::Input, DType::F32, {32, 1});
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {32, 64});  // 8 KiB
    b.load(0, A, 0, 0, 128);
    b.store(0, Out, 6144, 0, 128);
    const std::string msg = simulation_failure(b, {random_tensor("A", DType::F32, {32, 1}, 5)}, true);
    EXPECT_NE(msg.find("dma.store writes bytes [6144, 6272) of 'Out', outside the core's window [0, 4096)"),
              std::string::npos)
        << msg;
}

// One core copies a 16 KiB tensor in four 4 KiB pieces, moving both windows each iteration.
TEST(DramWindow, AMovingWindowLetsOneCoreCopyATensorFourTimesItsSpan) {
    ProgramBuilder b("walk", 4096);
    const int A = b.arg("A", ArgKind::Input, DType::F32, {32, 128});
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {32, 128});
    b.emit(0, Unit::Dma, Opcode::Loop, {4});
    b.window(0, A, 0, 4096);
    b.load(0, A, 0, 0, 128, 32).f[isa::field::DmaLoad::dram].stride[0] = 4096;
    b.window(0, Out, 0, 4096);
    b.store(0, Out, 0, 0, 128, 32).f[isa::field::DmaStore::dram].stride[0] = 4096;
    b.emit(0, Unit::Dma, Opcode::EndLoop, {});
    const HostTensor a = random_tensor("A", DType::F32, {32, 128}, 6);
    const HostRunResult r = run(b, {a});
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_EQ(r.outputs[0].data, a.data);
}

TEST(DramWindow, WindowsArePerCore) {
    ProgramBuilder b("per_core", 4096);
    const int A = b.arg("A", ArgKind::Input, DType::F32, {32, 64});  // 8 KiB
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {32, 2});
    b.window(0, A, 4096);
    b.load(0, A, 4096, 0, 128);  // inside core 0's moved window
    b.store(0, Out, 0, 0, 128);
    b.load(1, A, 4096, 0, 128);  // core 1's window is still [0, 4096)
    b.store(1, Out, 128, 0, 128);
    const std::string msg = simulation_failure(b, {random_tensor("A", DType::F32, {32, 64}, 7)}, false);
    EXPECT_NE(msg.find("core 1, dma instruction 0 (dma.load"), std::string::npos) << msg;
    EXPECT_NE(msg.find("outside the core's window [0, 4096)"), std::string::npos) << msg;
}

TEST(DramWindow, AWindowBaseOutsideTheTensorIsARuleViolation) {
    ProgramBuilder b("bad_base", 4096);
    const int A = b.arg("A", ArgKind::Input, DType::F32, {32, 64});  // 8192 bytes
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {32, 1});
    b.window(0, A, 8320);
    b.load(0, A, 0, 0, 128);
    b.store(0, Out, 0, 0, 128);
    const std::string msg = simulation_failure(b, {random_tensor("A", DType::F32, {32, 64}, 8)}, false);
    EXPECT_NE(msg.find("(dma.window"), std::string::npos) << msg;
    EXPECT_NE(msg.find("window base 8320 is outside 'A' (8192 bytes)"), std::string::npos) << msg;
}

}  // namespace
}  // namespace spyre::testing
