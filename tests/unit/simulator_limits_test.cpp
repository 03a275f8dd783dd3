// What bounds a simulation: the budgets of SimulationOptions (dynamic
// instructions, simulated cycles) stop a run with a BudgetExceeded naming
// them, and a functional run longer than one replay chunk (the functional
// record is replayed and dropped while the timing phase goes on) gives exact
// results and reports its errors as if the replay came after the timing phase.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>

#include "program_builder.h"

namespace spyre::testing {
namespace {

// One core loads `iterations` times the same stick: 1 + 2 * iterations dynamic instructions.
ProgramBuilder dma_loop(int64_t iterations) {
    ProgramBuilder b("dma_loop");
    const int A = b.arg("A", ArgKind::Input, DType::F16, {64});
    b.emit(0, Unit::Dma, Opcode::Loop, {iterations});
    b.load(0, A, 0, 0, 128);
    b.emit(0, Unit::Dma, Opcode::EndLoop, {});
    return b;
}

HostRunResult run_with(const ProgramBuilder &b, SimulationOptions o) {
    DeviceMemory mem(b.m.dram_usable_bytes);
    return run_on_host_tensors(b.p, b.m, mem, {random_tensor("A", DType::F16, {64}, 1)}, {}, o);
}

TEST(SimulatorBudgets, MoreDynamicInstructionsThanTheBudgetStopTheRunNamingIt) {
    const ProgramBuilder b = dma_loop(1000);
    for (bool functional : {true, false}) {
        SimulationOptions o;
        o.functional = functional;
        o.max_instructions = 2001;  // exactly what the program executes
        EXPECT_EQ(run_with(b, o).sim.dynamic_instructions, 2001u);
        o.max_instructions = 2000;
        try {
            run_with(b, o);
            ADD_FAILURE() << "the instruction budget did not stop the run";
        } catch (const BudgetExceeded &e) {
            EXPECT_EQ(e.budget, BudgetExceeded::Budget::Instructions);
            const std::string msg = e.what();
            EXPECT_NE(msg.find("'dma_loop' stopped at core 0, dma instruction 2 (endloop)"), std::string::npos) << msg;
            EXPECT_NE(msg.find("instruction budget exceeded: more than 2000 dynamic instructions executed (max_instructions)"),
                      std::string::npos)
                << msg;
        }
    }
}

TEST(SimulatorBudgets, ARunPastTheCycleBudgetStopsNamingIt) {
    const ProgramBuilder b = dma_loop(1000);
    SimulationOptions o;
    o.functional = false;
    const double cycles = run_with(b, o).sim.cycles;
    o.max_cycles = cycles;  // a run ending exactly at the budget is within it
    EXPECT_EQ(run_with(b, o).sim.cycles, cycles);
    for (double budget : {cycles / 2, cycles - 1}) {
        o.max_cycles = budget;
        try {
            run_with(b, o);
            ADD_FAILURE() << "the cycle budget " << budget << " did not stop a run of " << cycles << " cycles";
        } catch (const BudgetExceeded &e) {
            EXPECT_EQ(e.budget, BudgetExceeded::Budget::Cycles);
            EXPECT_NE(std::string(e.what()).find("simulated time budget exceeded: the run reached cycle"), std::string::npos)
                << e.what();
        }
    }
}

TEST(SimulatorBudgets, NoBudgetByDefault) {
    const SimulationOptions o;
    EXPECT_EQ(o.max_instructions, 0u);
    EXPECT_EQ(o.max_cycles, 0.0);
    EXPECT_EQ(run_with(dma_loop(5000), o).sim.dynamic_instructions, 10001u);
}

// The process's peak resident set in bytes since the last reset_peak_rss(), or -1 where Linux
// does not let us reset it (/proc/self/clear_refs).
bool reset_peak_rss() {
    std::ofstream f("/proc/self/clear_refs");
    f << "5";
    f.flush();
    return (bool)f;
}
int64_t peak_rss() {
    std::ifstream f("/proc/self/status");
    for (std::string line; std::getline(f, line);) {
        if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
    }
    return -1;
}

// 2^21 DMA transfers on one core. Timing-only runs used to keep ~95 bytes per transfer (the
// pending-transfer table grew by DRAM transfer id) and functional runs ~250 (the whole record
// for the replay): 134 and 453 MB here. Now neither grows with the instruction count.
TEST(SimulatorMemory, NeitherTimingOnlyNorFunctionalRunsGrowWithTheInstructionCount) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "resident memory under a sanitizer is mostly its shadow memory (and 20x slower)";
#endif
    ProgramBuilder b("many_transfers");
    const int A = b.arg("A", ArgKind::Input, DType::F16, {64});
    b.emit(0, Unit::Dma, Opcode::Loop, {64});
    b.emit(0, Unit::Dma, Opcode::Loop, {32768});
    b.load(0, A, 0, 0, 128);
    b.emit(0, Unit::Dma, Opcode::EndLoop, {});
    b.emit(0, Unit::Dma, Opcode::EndLoop, {});
    b.validate();
    run_with(b, {});  // takes the pooled scratchpads once, outside the measurement
    for (bool functional : {false, true}) {
        SimulationOptions o;
        o.functional = functional;
        if (!reset_peak_rss() || peak_rss() < 0) GTEST_SKIP() << "/proc/self/clear_refs or VmHWM unavailable";
        const int64_t before = peak_rss();
        EXPECT_EQ(run_with(b, o).sim.dynamic_instructions, 1u + 64 * (1 + 2 * 32768 + 1));
        const int64_t grown = peak_rss() - before;
        EXPECT_LT(grown, 32 << 20) << (functional ? "functional" : "timing-only") << " run of 2^21 transfers grew the peak RSS by "
                                   << grown << " bytes";
    }
}

// 70,000 sfu.add (more than one replay chunk of 65,536 recorded instructions), each
// depending on the one before: Out = A + 70000 * B, exactly.
TEST(SimulatorReplayChunks, AFunctionalRunLongerThanOneReplayChunkIsExact) {
    constexpr int64_t kAdds = 70000;
    ProgramBuilder b("long_accumulation");
    const int A = b.arg("A", ArgKind::Input, DType::I32, {32});
    const int B = b.arg("B", ArgKind::Input, DType::I32, {32});
    const int Out = b.arg("Out", ArgKind::Output, DType::I32, {32});
    b.load(0, A, 0, 0, 128);
    b.load(0, B, 0, 128, 128);
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Sfu, 0);
    b.emit(0, Unit::Sfu, Opcode::Loop, {2});
    b.emit(0, Unit::Sfu, Opcode::Loop, {kAdds / 2});
    b.emit(0, Unit::Sfu, Opcode::Add, {0, 0, 0, 0, 0, 128, 0, 0, 32, 1, (int)DType::I32, 0});
    b.emit(0, Unit::Sfu, Opcode::EndLoop, {});
    b.emit(0, Unit::Sfu, Opcode::EndLoop, {});
    b.signal(0, Unit::Sfu, 1);
    b.wait(0, Unit::Dma, 1);
    b.store(0, Out, 0, 0, 128);
    HostTensor a = HostTensor::zeros("A", {DType::I32, {32}}), bt = HostTensor::zeros("B", {DType::I32, {32}});
    for (int i = 0; i < 32; i++) {
        const int32_t va = 1000 * i - 7, vb = i - 16;
        std::memcpy(&a.data[4 * i], &va, 4);
        std::memcpy(&bt.data[4 * i], &vb, 4);
    }
    const HostRunResult r = run(b, {a, bt});
    for (int i = 0; i < 32; i++) EXPECT_EQ(element<int32_t>(r.outputs[0], i), 1000 * i - 7 + kAdds * (i - 16)) << "lane " << i;
}

// A read of never-written scratchpad is a timing-phase error, reported at the instruction that
// reads it, in simulated-time order: before a later bounds error, in a functional run longer than
// one replay chunk and in a timing-only run alike.
TEST(SimulatorReplayChunks, AnEarlierUnwrittenReadWinsOverALaterBoundsErrorInBothModes) {
    auto program = [](bool out_of_bounds_at_the_end) {
        ProgramBuilder b("poison_then_long_loop");
        const int A = b.arg("A", ArgKind::Input, DType::F16, {64});
        const int Out = b.arg("Out", ArgKind::Output, DType::F16, {64});
        b.store(0, Out, 0, 4096, 128);  // never written
        b.emit(0, Unit::Dma, Opcode::Loop, {2});
        b.emit(0, Unit::Dma, Opcode::Loop, {35000});
        b.load(0, A, 0, 0, 128);
        b.emit(0, Unit::Dma, Opcode::EndLoop, {});
        b.emit(0, Unit::Dma, Opcode::EndLoop, {});
        if (out_of_bounds_at_the_end) b.load(0, A, 0, b.m.scratchpad_bytes, 128);
        b.validate();
        return b;
    };
    auto message = [](const ProgramBuilder &b, bool functional) -> std::string {
        SimulationOptions o;
        o.functional = functional;
        try {
            run_with(b, o);
        } catch (const SimulationError &e) {
            EXPECT_EQ(e.unwritten_byte, 4096);
            EXPECT_EQ(e.unwritten_operand_start, 4096);
            return e.what();
        }
        return "no error";
    };
    for (bool functional : {true, false}) {
        for (bool later_bounds_error : {false, true}) {
            const std::string poison = message(program(later_bounds_error), functional);
            EXPECT_NE(poison.find("core 0, dma instruction 0 (dma.store"), std::string::npos) << poison;
            EXPECT_NE(poison.find("reads scratchpad byte 4096 which was never written"), std::string::npos) << poison;
        }
    }
    // Unchecked, the bounds error is what remains.
    SimulationOptions unchecked;
    unchecked.check_uninitialized = false;
    try {
        run_with(program(true), unchecked);
        ADD_FAILURE() << "expected the bounds error";
    } catch (const SimulationError &e) {
        const std::string bounds = e.what();
        EXPECT_NE(bounds.find("core 0, dma instruction 6 (dma.load"), std::string::npos) << bounds;
        EXPECT_NE(bounds.find("outside the core's own"), std::string::npos) << bounds;
        EXPECT_EQ(e.unwritten_byte, -1);
    }
}

}  // namespace
}  // namespace spyre::testing
