// Regression tests for undefined behaviour that the sanitizer builds
// (scripts/run-sanitizers.sh) are there to catch: each runs the simulator on
// the input that used to hit it. Under UBSan (build-asan/) a regression aborts
// the test binary; in any build the results must be the defined ones.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include "program_builder.h"

namespace spyre {
namespace {

using namespace spyre::testing;

// pt.matmul with i8 inputs accumulated into an i32 C holding INT32_MAX:
// the i32 accumulator wraps like the SFU's i32 results (it used to be a signed
// int32 overflow, undefined behaviour).
TEST(SanitizerRegression, MatmulI8AccumulatorWrapsAroundInsteadOfOverflowing) {
    const int N = 32;
    ProgramBuilder b("i8_wrap");
    int A = b.arg("A", ArgKind::Input, DType::I8, {1, 1});
    int B = b.arg("B", ArgKind::Input, DType::I8, {N, 1});
    int Cin = b.arg("Cin", ArgKind::Input, DType::I32, {N, 1});
    int Out = b.arg("Out", ArgKind::Output, DType::I32, {N, 1});
    b.load(0, A, 0, 0, 128);
    b.load(0, B, 0, 4096, 128);
    b.load(0, Cin, 0, 8192, 128);
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Pt, 0);
    b.emit(0, Unit::Pt, Opcode::Matmul, {8192, 128, 0, 128, 4096, 128, 1, N, 1, (int)DType::I8, 1});
    b.signal(0, Unit::Pt, 1);
    b.wait(0, Unit::Dma, 1);
    b.store(0, Out, 0, 8192, 128);

    TensorShape sa{DType::I8, {1, 1}}, sb{DType::I8, {N, 1}}, sc{DType::I32, {N, 1}};
    HostTensor a = HostTensor::zeros("A", sa), bt = HostTensor::zeros("B", sb), c = HostTensor::zeros("Cin", sc);
    a.data[0] = 3;
    for (int j = 0; j < N; j++) {
        bt.data[j] = (uint8_t)(int8_t)(j % 2 ? 1 : -1);
        const int32_t start = j % 2 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int32_t>::min();
        std::memcpy(&c.data[4 * j], &start, 4);
    }
    HostRunResult r = run(b, {a, bt, c});
    for (int j = 0; j < N; j++) {
        // INT32_MAX + 3 and INT32_MIN - 3, modulo 2^32.
        const int32_t expected = j % 2 ? std::numeric_limits<int32_t>::min() + 2 : std::numeric_limits<int32_t>::max() - 2;
        EXPECT_EQ(element<int32_t>(r.outputs[0], j), expected) << "column " << j;
    }
}

// A ring.put from core 0 into core 1's scratchpad and core 1's own dma.loads land in the same
// replay epoch, so the parallel functional replay runs them on two host threads at once. Both
// raise core 1's scratchpad high-water mark (what reset() clears before the pooled scratchpad is
// reused); it used to be a plain int64_t, a data race ThreadSanitizer reports
// (scripts/run-sanitizers.sh tsan; only TSan sees it reliably: a lost update would leave stale
// bytes in a pooled scratchpad, which no result shows). The rounds reuse pooled scratchpads.
TEST(SanitizerRegression, RingPutIntoACoreWhileItLoadsRaisesItsHighWaterMarkWithoutARace) {
    // Long lists on both cores, so that the replay's two threads take one core each.
    constexpr int64_t kRingBytes = 64 * 1024, kRingDst = 1024 * 1024, kLoads = 4000;
    ProgramBuilder b("ring_while_loading");
    const int X = b.arg("X", ArgKind::Input, DType::F16, {kRingBytes / 2});
    const int Y = b.arg("Y", ArgKind::Output, DType::F16, {kRingBytes / 2});
    const int Z = b.arg("Z", ArgKind::Input, DType::F16, {64});
    b.load(0, X, 0, 0, kRingBytes);
    for (int core = 0; core < 2; core++) {
        b.emit(core, Unit::Dma, Opcode::Loop, {kLoads});
        b.load(core, Z, 0, kRingBytes + 128 * core, 128);
        b.emit(core, Unit::Dma, Opcode::EndLoop, {});
    }
    b.emit(0, Unit::Dma, Opcode::RingPut, {1, 0, kRingDst, kRingBytes, 9});
    b.wait(1, Unit::Dma, 9);
    b.store(1, Y, 0, kRingDst, kRingBytes);
    const HostTensor x = random_tensor("X", DType::F16, {kRingBytes / 2}, 5);
    const HostTensor z = random_tensor("Z", DType::F16, {64}, 6);
    for (int round = 0; round < 4; round++) {
        const HostRunResult r = run(b, {x, z});
        ASSERT_EQ(r.outputs.at(0).data, x.data) << "round " << round;
    }
}

}  // namespace
}  // namespace spyre
