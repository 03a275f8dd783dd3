// Reads of scratchpad bytes no instruction wrote: the timing phase refuses them, so a
// timing-only run (and so the compiler's dry run) reports exactly what a functional run does,
// for every operand that reads: DMA store sources, SFU operands, PT operands and accumulators,
// reduction accumulators and ring sources. Written bytes are tracked exactly: partial and
// strided writes leave their gaps unwritten, and adjacent writes join.
#include <gtest/gtest.h>

#include "program_builder.h"

namespace spyre::testing {
namespace {

using isa::Opcode;
using isa::Unit;

// The error of both kinds of run; they must be the same message.
std::string both_modes_failure(const ProgramBuilder &b, const std::vector<HostTensor> &inputs) {
    const std::string functional = simulation_failure(b, inputs, true);
    const std::string timing_only = simulation_failure(b, inputs, false);
    EXPECT_EQ(functional, timing_only) << "functional and timing-only runs of '" << b.p.kernel_name << "' disagree";
    return timing_only;
}

// In: f32 [64, 4] loaded as rows of 256 bytes every `sp_stride` bytes; the SFU copies rows of
// `read_bytes` every 256 bytes to 4096; Out gets them back.
ProgramBuilder strided_rows(const std::string &name, int64_t sp_stride, int64_t read_bytes) {
    ProgramBuilder b(name);
    const int In = b.arg("In", ArgKind::Input, DType::F32, {64, 4});
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {64, 4});
    b.emit(0, Unit::Dma, Opcode::DmaLoad, {In, 0, 0, 256, 256, 4, 256, sp_stride, 4, 1, 0, 0, 1});
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Sfu, 0);
    b.emit(0, Unit::Sfu, Opcode::Copy, {4096, 256, 0, 256, 0, read_bytes / 4, 4, (int)DType::F32, 0});
    b.signal(0, Unit::Sfu, 1);
    b.wait(0, Unit::Dma, 1);
    b.store(0, Out, 0, 4096, 256, 4);
    return b;
}

TEST(UnwrittenReads, ADmaStoreOfBytesNeverWrittenIsReportedTheSameInBothModes) {
    ProgramBuilder b("store_unwritten");
    const int A = b.arg("A", ArgKind::Input, DType::F32, {32});
    const int O = b.arg("O", ArgKind::Output, DType::F32, {64});
    b.load(0, A, 0, 0, 128);
    b.store(0, O, 0, 0, 256);  // bytes 128..256 were never written
    const std::string msg = both_modes_failure(b, {random_tensor("A", DType::F32, {32}, 1)});
    EXPECT_NE(msg.find("core 0, dma instruction 1 (dma.store"), std::string::npos) << msg;
    EXPECT_NE(msg.find("dma.store source reads scratchpad byte 128 which was never written"), std::string::npos) << msg;
}

TEST(UnwrittenReads, TheGapsBetweenStridedRowsStayUnwritten) {
    const HostTensor in = random_tensor("In", DType::F32, {64, 4}, 2);
    // Rows written every 512 bytes; read back every 256: the second row read is the first gap.
    const std::string msg = both_modes_failure(strided_rows("gaps", 512, 256), {in});
    EXPECT_NE(msg.find("core 0, sfu instruction 1 (sfu.copy"), std::string::npos) << msg;
    EXPECT_NE(msg.find("SFU operand a reads scratchpad byte 256 which was never written"), std::string::npos) << msg;
}

TEST(UnwrittenReads, AVectorThatOverhangsItsWrittenRowIsReported) {
    const HostTensor in = random_tensor("In", DType::F32, {64, 4}, 3);
    // Rows of 256 bytes written every 256 (one run of 1024 bytes); each read row is 384 bytes:
    // rows 0-2 stay inside the written run, row 3 reads [768, 1152).
    const std::string msg = both_modes_failure(strided_rows("overhang", 256, 384), {in});
    EXPECT_NE(msg.find("SFU operand a reads scratchpad byte 1024 which was never written"), std::string::npos) << msg;
}

TEST(UnwrittenReads, RowsWrittenByDifferentInstructionsJoin) {
    ProgramBuilder b("joined");
    const int In = b.arg("In", ArgKind::Input, DType::F32, {64, 2});
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {64, 2});
    b.load(0, In, 256, 256, 256);  // the second row first
    b.load(0, In, 0, 0, 256);
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Sfu, 0);
    b.emit(0, Unit::Sfu, Opcode::Copy, {4096, 512, 0, 512, 0, 128, 1, (int)DType::F32, 0});  // one row of 512 bytes
    b.signal(0, Unit::Sfu, 1);
    b.wait(0, Unit::Dma, 1);
    b.store(0, Out, 0, 4096, 512);
    const HostTensor in = random_tensor("In", DType::F32, {64, 2}, 4);
    EXPECT_EQ(both_modes_failure(b, {in}), "");
    EXPECT_EQ(run(b, {in}).outputs.at(0).data, in.data);
}

// The SFU computes row by row: row 1 of this copy reads the bytes row 0 wrote.
TEST(UnwrittenReads, ARowMayReadWhatAnEarlierRowOfTheSameInstructionWrote) {
    ProgramBuilder b("chained_rows");
    const int In = b.arg("In", ArgKind::Input, DType::F16, {64});
    const int Out = b.arg("Out", ArgKind::Output, DType::F16, {64, 3});
    b.load(0, In, 0, 128, 128);
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Sfu, 0);
    b.emit(0, Unit::Sfu, Opcode::Copy, {256, 128, 128, 128, 0, 64, 2, (int)DType::F16, 0});
    b.signal(0, Unit::Sfu, 1);
    b.wait(0, Unit::Dma, 1);
    b.store(0, Out, 0, 128, 384);
    const HostTensor in = random_tensor("In", DType::F16, {64}, 10);
    EXPECT_EQ(both_modes_failure(b, {in}), "");
    const HostRunResult r = run(b, {in});
    std::vector<uint8_t> expected;
    for (int i = 0; i < 3; i++) expected.insert(expected.end(), in.data.begin(), in.data.end());
    EXPECT_EQ(r.outputs.at(0).data, expected);
}

TEST(UnwrittenReads, APtAccumulatorNeverWrittenIsReported) {
    ProgramBuilder b("pt_accumulate");
    const int A = b.arg("A", ArgKind::Input, DType::F16, {64, 65});
    const int O = b.arg("O", ArgKind::Output, DType::F32, {32, 1});
    b.load(0, A, 0, 0, 8320);  // A at 0 (one row of 64 f16) and B at 128 (64 rows of 32 f16, every 128 bytes)
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Pt, 0);
    // C (32 f32 at 16384) accumulates, but nothing wrote it.
    b.emit(0, Unit::Pt, Opcode::Matmul, {16384, 128, 0, 128, 128, 128, 1, 32, 64, (int)DType::F16, 1});
    b.signal(0, Unit::Pt, 1);
    b.wait(0, Unit::Dma, 1);
    b.store(0, O, 0, 16384, 128);
    const std::string msg = both_modes_failure(b, {random_tensor("A", DType::F16, {64, 65}, 5)});
    EXPECT_NE(msg.find("core 0, pt instruction 1 (pt.matmul"), std::string::npos) << msg;
    EXPECT_NE(msg.find("pt.matmul accumulator C reads scratchpad byte 16384 which was never written"), std::string::npos)
        << msg;
}

TEST(UnwrittenReads, AReductionAccumulatorNeverWrittenIsReported) {
    ProgramBuilder b("rowsum_accumulate");
    const int In = b.arg("In", ArgKind::Input, DType::F32, {64, 4});
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {32});
    b.load(0, In, 0, 0, 256, 4);
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Sfu, 0);
    // Row sums of 4 rows into 4 f32 at 4096, accumulating onto values nothing wrote.
    b.emit(0, Unit::Sfu, Opcode::RowSum, {4096, 4, 0, 256, 64, 4, (int)DType::F32, 1});
    b.signal(0, Unit::Sfu, 1);
    b.wait(0, Unit::Dma, 1);
    b.store(0, Out, 0, 4096, 128);
    const std::string msg = both_modes_failure(b, {random_tensor("In", DType::F32, {64, 4}, 6)});
    EXPECT_NE(msg.find("SFU reduction accumulator reads scratchpad byte 4096 which was never written"), std::string::npos)
        << msg;
}

TEST(UnwrittenReads, ARingPutOfBytesNeverWrittenIsReportedAndItsDestinationIsWritten) {
    auto program = [](bool load_first) {
        ProgramBuilder b(load_first ? "ring_loaded" : "ring_unloaded");
        const int X = b.arg("X", ArgKind::Input, DType::F16, {256});
        const int Y = b.arg("Y", ArgKind::Output, DType::F16, {256});
        if (load_first) b.load(0, X, 0, 0, 512);
        b.emit(0, Unit::Dma, Opcode::RingPut, {1, 0, 1024, 512, 9});
        b.wait(1, Unit::Dma, 9);
        b.store(1, Y, 0, 1024, 512);  // reads what the put wrote into core 1
        return b;
    };
    const HostTensor x = random_tensor("X", DType::F16, {256}, 7);
    EXPECT_EQ(both_modes_failure(program(true), {x}), "");
    const std::string msg = both_modes_failure(program(false), {x});
    EXPECT_NE(msg.find("core 0, dma instruction 0 (ring.put"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ring.put source reads scratchpad byte 0 which was never written"), std::string::npos) << msg;
}

TEST(UnwrittenReads, TheErrorCarriesTheByteAndWhereTheOperandsRunStarts) {
    ProgramBuilder b = strided_rows("carried", 512, 256);
    SimulationOptions o;
    o.functional = false;
    try {
        DeviceMemory mem(b.m.dram_usable_bytes);
        run_on_host_tensors(b.p, b.m, mem, {random_tensor("In", DType::F32, {64, 4}, 8)}, {}, o);
        ADD_FAILURE() << "expected a SimulationError";
    } catch (const SimulationError &e) {
        EXPECT_EQ(e.unwritten_byte, 256);
        EXPECT_EQ(e.unwritten_operand_start, 256);  // the second row read
        EXPECT_EQ(e.core, 0);
    }
}

TEST(UnwrittenReads, UncheckedRunsAcceptThem) {
    ProgramBuilder b = strided_rows("unchecked", 512, 256);
    SimulationOptions o;
    o.functional = false;
    o.check_uninitialized = false;
    DeviceMemory mem(b.m.dram_usable_bytes);
    EXPECT_NO_THROW(run_on_host_tensors(b.p, b.m, mem, {random_tensor("In", DType::F32, {64, 4}, 9)}, {}, o));
}

}  // namespace
}  // namespace spyre::testing
