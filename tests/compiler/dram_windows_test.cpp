// The compiler's DRAM-window pass (target/emission/dram_windows.h) on hand-built
// streams: it adds dma.window where a core reaches past max_core_span_bytes
// of a tensor, leaves tensors inside the initial window alone, refuses a
// single transfer wider than the span; and gen_bmm compiled for a machine
// with a small span matches its host build.
#include <gtest/gtest.h>

#include "../unit/program_builder.h"
#include "emission/dram_windows.h"
#include "spyre/simulator.h"
#include "diagnostics.h"

namespace spyre::testing {
namespace {

TEST(DramWindowPass, WindowsLetTheStreamWalkLargeTensorsAndLeaveSmallOnesAlone) {
    ProgramBuilder b("compiled_walk", 4096);
    const int A = b.arg("A", ArgKind::Input, DType::F32, {32, 128});  // 16 KiB, walked
    const int S = b.arg("S", ArgKind::Input, DType::F32, {32, 8});    // 1 KiB, inside [0, span)
    const int H = b.arg("H", ArgKind::Input, DType::F32, {32, 64});   // 8 KiB, only its upper half read
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {32, 128});
    b.load(0, S, 0, 4096, 128, 8);
    b.load(0, H, 4096, 8192, 128, 32);
    b.emit(0, Unit::Dma, Opcode::Loop, {4});
    b.load(0, A, 0, 0, 128, 32).f[isa::field::DmaLoad::dram].stride[0] = 4096;
    b.store(0, Out, 0, 0, 128, 32).f[isa::field::DmaStore::dram].stride[0] = 4096;
    b.emit(0, Unit::Dma, Opcode::EndLoop, {});
    b.store(0, Out, 0, 4096, 128, 8);  // rows 0-7 of Out from S, row 0-7 of the loop's copy overwritten
    const HostTensor a = random_tensor("A", DType::F32, {32, 128}, 9);
    const HostTensor s = random_tensor("S", DType::F32, {32, 8}, 10);
    const HostTensor h = random_tensor("H", DType::F32, {32, 64}, 11);
    ASSERT_NE(simulation_failure(b, {a, s, h}, false), "") << "without windows the stream must break the rule";

    compiler::address_through_dram_windows(b.p.cores[0], b.p.args, b.m);
    const auto &dma = b.p.cores[0].unit[(int)Unit::Dma];
    int windows_of[4] = {0, 0, 0, 0};
    for (const isa::Instruction &i : dma) {
        if (i.op == Opcode::DmaWindow) windows_of[i[isa::field::DmaWindow::arg]]++;
    }
    EXPECT_EQ(windows_of[A], 1);    // before its one transfer, inside the loop
    EXPECT_EQ(windows_of[S], 0);    // [0, 1024) is inside the initial window
    EXPECT_EQ(windows_of[H], 1);    // once, at the start
    EXPECT_EQ(windows_of[Out], 2);  // before each of its two stores
    ASSERT_EQ(dma[0].op, Opcode::DmaWindow);
    EXPECT_EQ(dma[0][isa::field::DmaWindow::base], 4096);

    const HostRunResult r = run(b, {a, s, h});
    ASSERT_EQ(r.outputs.size(), 1u);
    std::vector<uint8_t> expect = a.data;
    std::copy(s.data.begin(), s.data.end(), expect.begin());
    EXPECT_EQ(r.outputs[0].data, expect);
}

// A tall strided tile: one transfer whose rows lie 4 KiB apart reaches over 8 KiB of DRAM.
TEST(DramWindowPass, ATransferReachingOverMoreThanTheSpanIsSplitIntoPiecesThatDoNot) {
    ProgramBuilder b("tall_tile", 4096);
    const int A = b.arg("A", ArgKind::Input, DType::F32, {32, 128});  // 16 KiB
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {32, 3});
    // Rows 0, 32 and 64 of A (4 KiB apart: two rows reach 4224 bytes), then a zero-filled fourth row.
    b.emit(0, Unit::Dma, Opcode::DmaLoad, {A, 0, 0, 128, 128, 4, 4096, 128, 3, 1, 0, 0, 1});
    b.store(0, Out, 0, 0, 128, 3);
    const HostTensor a = random_tensor("A", DType::F32, {32, 128}, 12);
    ASSERT_NE(simulation_failure(b, {a}, false), "");

    compiler::address_through_dram_windows(b.p.cores[0], b.p.args, b.m);
    int loads = 0, windows = 0;
    for (const isa::Instruction &i : b.p.cores[0].unit[(int)Unit::Dma]) {
        loads += i.op == Opcode::DmaLoad;
        windows += i.op == Opcode::DmaWindow;
    }
    EXPECT_EQ(loads, 4);    // one row each: the three read and the zero-filled one
    EXPECT_EQ(windows, 3);  // one per piece that reads DRAM
    const HostRunResult r = run(b, {a});
    ASSERT_EQ(r.outputs.size(), 1u);
    for (int row = 0; row < 3; row++) {
        EXPECT_TRUE(std::equal(a.data.begin() + row * 4096, a.data.begin() + row * 4096 + 128,
                               r.outputs[0].data.begin() + row * 128))
            << "row " << row;
    }
}

// Rows of 8 KiB, twice the span, moved as whole sticks of one row at a time; the load's
// zero-padded tail (valid_bytes < row_bytes) stays zero-filled in the piece it falls in.
TEST(DramWindowPass, ADmaRowLongerThanTheSpanIsMovedInPiecesOfWholeSticks) {
    ProgramBuilder b("long_rows", 4096);
    const int A = b.arg("A", ArgKind::Input, DType::F32, {2048, 4});  // 8 KiB rows
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {2048, 2});
    b.emit(0, Unit::Dma, Opcode::DmaLoad, {A, 8192, 0, 8192, 8192 - 512, 2, 8192, 8192, 2, 1, 0, 0, 1});
    b.store(0, Out, 0, 0, 8192, 2);
    const HostTensor a = random_tensor("A", DType::F32, {2048, 4}, 13);
    ASSERT_NE(simulation_failure(b, {a}, false), "");
    compiler::address_through_dram_windows(b.p.cores[0], b.p.args, b.m);
    int loads = 0;
    for (const isa::Instruction &i : b.p.cores[0].unit[(int)Unit::Dma]) loads += i.op == Opcode::DmaLoad;
    EXPECT_EQ(loads, 4);  // 2 rows x 2 pieces of 4 KiB
    const HostRunResult r = run(b, {a});
    ASSERT_EQ(r.outputs.size(), 1u);
    for (int row = 0; row < 2; row++) {
        const auto src = a.data.begin() + (row + 1) * 8192;
        const auto dst = r.outputs[0].data.begin() + row * 8192;
        EXPECT_TRUE(std::equal(src, src + 8192 - 512, dst)) << "row " << row;
        EXPECT_TRUE(std::all_of(dst + 8192 - 512, dst + 8192, [](uint8_t v) { return v == 0; })) << "row " << row;
    }
}

TEST(DramWindowPass, ASpanBelowOneStickIsACompileErrorNamingTheTensor) {
    ProgramBuilder b("tiny_span");
    b.set_core_span(64);
    const int A = b.arg("A", ArgKind::Input, DType::F32, {32, 4});
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {32, 1});
    b.load(0, A, 256, 0, 128);
    b.store(0, Out, 0, 0, 128);
    try {
        compiler::address_through_dram_windows(b.p.cores[0], b.p.args, b.m);
        FAIL() << "expected a CompileError";
    } catch (const CompileError &e) {
        EXPECT_NE(std::string(e.what()).find("a core addresses 64 bytes of 'A' at a time (max_core_span_bytes), "
                                             "less than one 128-byte stick"),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace spyre::testing
