// The timing model's laws, each on a program built for it: work scales time,
// compute scales with cores, DRAM stops scaling once saturated (about two
// cores), read/write mixes run at the balanced rate, the PT works in 8-row
// passes, transcendentals are dearer, and the synchronization modes change
// time but never results. (Every run through program_builder.h's run() also
// checks timing-only == functional cycles and the roofline bound.)
#include <gtest/gtest.h>

#include "program_builder.h"
#include "spyre/report.h"

namespace spyre::testing {
namespace {

// Each of `cores` cores streams `rows_per_core` rows of 4 KiB (32 sticks) from X
// to Y through its scratchpad, one DMA each way per row, double buffered.
ProgramBuilder copy_program(int cores, int rows_per_core, bool write_back = true) {
    ProgramBuilder b("copy");
    const int total_rows = cores * rows_per_core;
    int X = b.arg("X", ArgKind::Input, DType::F32, {1024, total_rows});
    int Y = b.arg("Y", ArgKind::Output, DType::F32, {1024, total_rows});
    for (int c = 0; c < cores; c++) {
        for (int i = 0; i < rows_per_core; i++) {
            const int64_t row = (int64_t)(c * rows_per_core + i) * 4096, buf = (i % 2) * 4096;
            b.load(c, X, row, buf, 4096);
            if (write_back) b.store(c, Y, row, buf, 4096);
        }
        if (!write_back) {
            // Keep the output defined: one store of the last buffer per core.
            b.store(c, Y, (int64_t)c * rows_per_core * 4096, ((rows_per_core - 1) % 2) * 4096, 4096);
        }
    }
    return b;
}

double timing_cycles(const ProgramBuilder &b) {
    SimulationOptions t;
    t.functional = false;
    std::vector<HostTensor> none;
    for (const auto &a : b.p.args) {
        if (a.kind == ArgKind::Input) none.push_back(HostTensor::zeros(a.name, a.shape));
    }
    return run(b, none, {}, t).sim.cycles;
}

// `cores` cores each run `matmuls` 64x64x64 f16 matmuls on tiles loaded once.
ProgramBuilder matmul_program(int cores, int matmuls_per_core, int m = 64) {
    ProgramBuilder b("matmuls");
    int A = b.arg("A", ArgKind::Input, DType::F16, {64, 64});
    int B = b.arg("B", ArgKind::Input, DType::F16, {64, 64});
    for (int c = 0; c < cores; c++) {
        b.load(c, A, 0, 0, 128, 64);
        b.load(c, B, 0, 8192, 128, 64);
        b.signal(c, Unit::Dma, 0);
        b.wait(c, Unit::Pt, 0);
        b.emit(c, Unit::Pt, Opcode::Loop, {matmuls_per_core});
        b.emit(c, Unit::Pt, Opcode::Matmul, {16384, 256, 0, 128, 8192, 128, m, 64, 64, (int)DType::F16, 1});
        b.emit(c, Unit::Pt, Opcode::EndLoop, {});
    }
    // Zero-initialise the accumulators first (accumulate=1 reads them).
    for (int c = 0; c < cores; c++) {
        auto &pt = b.p.cores[c].unit[(int)Unit::Pt];
        pt.insert(pt.begin(), isa::make_instruction(Opcode::Wait, {1}));
        b.emit(c, Unit::Sfu, Opcode::Copy, {16384, 0, 0, 0, 2, 64 * 64, 1, (int)DType::F32, 0});
        b.signal(c, Unit::Sfu, 1);
    }
    return b;
}

TEST(TimingModel, TwiceTheWorkTakesAboutTwiceTheCycles) {
    const double dram1 = timing_cycles(copy_program(32, 16)), dram2 = timing_cycles(copy_program(32, 32));
    EXPECT_NEAR(dram2 / dram1, 2.0, 0.2) << dram1 << " vs " << dram2;
    const double pt1 = timing_cycles(matmul_program(4, 50)), pt2 = timing_cycles(matmul_program(4, 100));
    EXPECT_NEAR(pt2 / pt1, 2.0, 0.2) << pt1 << " vs " << pt2;
}

TEST(TimingModel, ComputeBoundWorkScalesWithCores) {
    // The same 12800 matmuls on 1 core and spread over 32 cores.
    const double one = timing_cycles(matmul_program(1, 12800));
    const double all = timing_cycles(matmul_program(32, 400));
    EXPECT_GT(one / all, 28.0) << one << " vs " << all;
    EXPECT_LT(one / all, 32.5) << one << " vs " << all;
}

TEST(TimingModel, DramBoundWorkStopsScalingAtAboutTwoCores) {
    // 1024 rows of 4 KiB read (read-only traffic), spread over 1, 2, 4 and 32 cores.
    auto t = [](int cores) { return timing_cycles(copy_program(cores, 1024 / cores, /*write_back=*/false)); };
    const double c1 = t(1), c2 = t(2), c4 = t(4), c32 = t(32);
    EXPECT_NEAR(c1 / c2, 2.0, 0.25) << c1 << " " << c2;   // one core is held by its port
    EXPECT_LT(c2 / c4, 1.15) << c2 << " " << c4;          // two cores saturate the card
    EXPECT_LT(c2 / c32, 1.2) << c2 << " " << c32;
    // And the saturated rate is the read-only bandwidth of MACHINE.md.
    const MachineDescription m = builtin_machine();
    const double gbps = 1024.0 * 4096 / (c32 / m.clock_ghz);
    EXPECT_NEAR(gbps, m.dram_bandwidth_gbps, 0.1 * m.dram_bandwidth_gbps);
}

TEST(TimingModel, BalancedReadWriteRunsAtTheBalancedRate) {
    const MachineDescription m = builtin_machine();
    const double cycles = timing_cycles(copy_program(32, 32));
    const double bytes = 2.0 * 32 * 32 * 4096;
    const double gbps = bytes / (cycles / m.clock_ghz);
    EXPECT_NEAR(gbps, 105.0, 8.0);  // MACHINE.md: about 105 GB/s for a balanced mix
}

TEST(TimingModel, ThinMatmulTilesWasteThePass) {
    // 1 row and 8 rows of A cost the same pass; 64 rows are 8 passes.
    const double rows1 = timing_cycles(matmul_program(1, 400, 1));
    const double rows8 = timing_cycles(matmul_program(1, 400, 8));
    const double rows64 = timing_cycles(matmul_program(1, 400, 64));
    EXPECT_NEAR(rows1 / rows8, 1.0, 0.02);
    EXPECT_NEAR(rows64 / rows8, 8.0, 0.5);
}

TEST(TimingModel, TranscendentalsCostMoreThanAdds) {
    auto sfu = [](Opcode op) {
        ProgramBuilder b("sfu_cost");
        int X = b.arg("X", ArgKind::Input, DType::F32, {32, 64});
        b.load(0, X, 0, 0, 128, 64);
        b.signal(0, Unit::Dma, 0);
        b.wait(0, Unit::Sfu, 0);
        b.emit(0, Unit::Sfu, Opcode::Loop, {200});
        b.emit(0, Unit::Sfu, op, {8192, 128, 0, 128, 0, 32, 64, (int)DType::F32, 0});
        b.emit(0, Unit::Sfu, Opcode::EndLoop, {});
        return timing_cycles(b);
    };
    const double exp_cycles = sfu(Opcode::Exp), copy_cycles = sfu(Opcode::Copy);
    EXPECT_GT(exp_cycles / copy_cycles, 3.0);
    EXPECT_LT(exp_cycles / copy_cycles, 4.5);
}

TEST(TimingModel, SynchronizationModesNeverChangeResults) {
    ProgramBuilder b = copy_program(8, 8);
    HostTensor x = random_tensor("X", DType::F32, {1024, 64}, 3);
    auto normal = run(b, {x});
    for (SyncMode mode : {SyncMode::ForcedSerial, SyncMode::RandomLatency}) {
        SimulationOptions o;
        o.sync = mode;
        o.seed = 7;
        auto r = run(b, {x}, {}, o);
        EXPECT_EQ(r.outputs[0].data, normal.outputs[0].data);
        EXPECT_NE(r.sim.cycles, normal.sim.cycles);
    }
    EXPECT_EQ(normal.outputs[0].data, x.data);
}

}  // namespace
}  // namespace spyre::testing
