// The timing model's laws, each on a program built for it: work scales time,
// compute scales with cores, DRAM throughput grows with the cores moving data
// (one core gets dram_one_core_fraction of the card, all cores its peak),
// read/write mixes pay the turnaround, the PT works in 8-row passes at the
// calibrated sustained rate, transcendentals and row reductions cost what the
// machine description says, and the synchronization modes change time but
// never results. The expected figures come from the machine description, so
// the laws hold for the calibrated values and for any refit. (Every run through program_builder.h's run() also
// checks timing-only == functional cycles and the roofline bound.)
#include <gtest/gtest.h>

#include <cmath>

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

TEST(TimingModel, DramThroughputGrowsWithTheCoresMovingData) {
    // 1024 rows of 4 KiB read (read-only traffic), spread over 1, 4, 16 and 32 cores.
    const MachineDescription m = builtin_machine();
    auto gbps = [&](int cores) {
        const double cycles = timing_cycles(copy_program(cores, 1024 / cores, /*write_back=*/false));
        return 1024.0 * 4096 / (cycles / m.clock_ghz);
    };
    const double g1 = gbps(1), g4 = gbps(4), g16 = gbps(16), g32 = gbps(32);
    // One core alone gets dram_one_core_fraction of the card (the hardware's one-core rate) ...
    EXPECT_NEAR(g1, m.dram_one_core_fraction * m.dram_bandwidth_gbps, 0.1 * m.dram_bandwidth_gbps);
    // ... more cores get more (on the card an add keeps speeding up from 4 to 32 cores) ...
    EXPECT_LT(g1, g4);
    EXPECT_LT(g4, g16);
    EXPECT_LT(g16, g32);
    // ... and all cores the read-only peak.
    EXPECT_NEAR(g32, m.dram_bandwidth_gbps, 0.1 * m.dram_bandwidth_gbps);
}

TEST(TimingModel, BalancedReadWritePaysTheTurnaround) {
    const MachineDescription m = builtin_machine();
    const double cycles = timing_cycles(copy_program(32, 32));
    const double bytes = 2.0 * 32 * 32 * 4096;
    const double gbps = bytes / (cycles / m.clock_ghz);
    // R = W = bytes / 2: time = bytes / peak + turnaround x bytes / 2.
    const double expected = 1.0 / (1.0 / m.dram_bandwidth_gbps + m.dram_turnaround_ns_per_byte / 2.0);
    EXPECT_NEAR(gbps, expected, 0.08 * expected);
    EXPECT_LT(gbps, 0.95 * m.dram_bandwidth_gbps);  // the turnaround is a real loss
}

TEST(TimingModel, ComputeBoundMatmulRunsAtTheSustainedRate) {
    // 64-row fp16 tiles (8 full passes): the PT sustains pt_sustained_macs_per_ns, not the datasheet peak.
    const MachineDescription m = builtin_machine();
    const int matmuls = 2000;
    const double cycles = timing_cycles(matmul_program(1, matmuls));
    const double macs_per_ns = (double)matmuls * 64 * 64 * 64 / (cycles / m.clock_ghz);
    // Each 8-row pass: 8 x 64 x 64 MACs at the sustained rate, plus the fill.
    const double pass = 8.0 * 64 * 64 / (m.pt_sustained_macs_per_ns / m.clock_ghz);
    const double expected = m.pt_sustained_macs_per_ns * pass / (pass + m.pt_pass_fill_cycles);
    EXPECT_LT(macs_per_ns, m.pt_sustained_macs_per_ns * 1.001);
    EXPECT_NEAR(macs_per_ns, expected, 0.03 * expected);
    EXPECT_LT(m.pt_sustained_macs_per_ns, m.pt_peak_macs_per_cycle_fp16 * m.clock_ghz);
}

TEST(TimingModel, ThinMatmulTilesWasteThePass) {
    // 1 row and 8 rows of A cost the same pass; 64 rows are 8 passes.
    const double rows1 = timing_cycles(matmul_program(1, 400, 1));
    const double rows8 = timing_cycles(matmul_program(1, 400, 8));
    const double rows64 = timing_cycles(matmul_program(1, 400, 64));
    EXPECT_NEAR(rows1 / rows8, 1.0, 0.02);
    EXPECT_NEAR(rows64 / rows8, 8.0, 0.5);
}

// Cycles of `n` m x 128 x 128 matmuls of `t` operands (int8 into an i32 C, f16 into f32) on one core.
double matmul_loop_cycles(DType t, int n, int m = 64) {
    ProgramBuilder b("pt_rate");
    const int64_t eb = dtype_bytes(t);
    int A = b.arg("A", ArgKind::Input, t, {128, 64});
    int B = b.arg("B", ArgKind::Input, t, {128, 128});
    b.load(0, A, 0, 0, 128 * eb, 64);
    b.load(0, B, 0, 65536, 128 * eb, 128);
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Pt, 0);
    b.emit(0, Unit::Pt, Opcode::Loop, {n});
    b.emit(0, Unit::Pt, Opcode::Matmul, {262144, 512, 0, 128 * eb, 65536, 128 * eb, m, 128, 128, (int)t, 0});
    b.emit(0, Unit::Pt, Opcode::EndLoop, {});
    return timing_cycles(b);
}

TEST(TimingModel, Int8MatmulRunsAtTheInt8RateFactorOfFp16) {
    // pt.matmul in_type=i8 (into i32): each 8-row pass at pt_int8_rate_factor x the fp16 sustained
    // rate, plus the same fill. Marginal cycles of 200 matmuls, so the loads cancel.
    const MachineDescription m = builtin_machine();
    const double i8 = matmul_loop_cycles(DType::I8, 400) - matmul_loop_cycles(DType::I8, 200);
    const double f16 = matmul_loop_cycles(DType::F16, 400) - matmul_loop_cycles(DType::F16, 200);
    const double pass = 8.0 * 128 * 128 / m.pt_macs_per_cycle(1.0);
    const double expected = (pass / m.pt_int8_rate_factor + m.pt_pass_fill_cycles) / (pass + m.pt_pass_fill_cycles);
    EXPECT_NEAR(i8 / f16, expected, 0.02 * expected);
    EXPECT_LT(i8, f16) << "int8 is not faster than fp16 on the PT (pt_int8_rate_factor " << m.pt_int8_rate_factor << ")";
}

// Cycles of 200 SFU instructions (`op` with `fields`) on a 32 x 64 f32 tile: the difference of runs
// of 400 and 200, so the tile's load cancels.
double marginal_sfu_cycles(Opcode op, std::initializer_list<int64_t> fields) {
    auto run_n = [&](int n) {
        ProgramBuilder b("sfu_cost");
        int X = b.arg("X", ArgKind::Input, DType::F32, {32, 64});
        b.load(0, X, 0, 0, 128, 64);
        b.signal(0, Unit::Dma, 0);
        b.wait(0, Unit::Sfu, 0);
        b.emit(0, Unit::Sfu, Opcode::Loop, {n});
        b.emit(0, Unit::Sfu, op, fields);
        b.emit(0, Unit::Sfu, Opcode::EndLoop, {});
        return timing_cycles(b);
    };
    return run_n(400) - run_n(200);
}

TEST(TimingModel, TranscendentalsCostMoreThanAdds) {
    auto sfu = [](Opcode op) { return marginal_sfu_cycles(op, {8192, 128, 0, 128, 0, 32, 64, (int)DType::F32, 0}); };
    const MachineDescription m = builtin_machine();
    // 32 x 64 f32 elements: 8 KiB through both corelets, then the issue overhead.
    const double vector = std::ceil(32.0 * 64 * 4 / (m.sfu_bytes_per_cycle_per_corelet * m.corelets_per_core));
    const double exp_cycles = sfu(Opcode::Exp), copy_cycles = sfu(Opcode::Copy);
    const double expected = (vector * m.sfu_transcendental_cost + m.sfu_instruction_overhead_cycles) /
                            (vector + m.sfu_instruction_overhead_cycles);
    EXPECT_NEAR(exp_cycles / copy_cycles, expected, 0.05 * expected);
    EXPECT_GT(exp_cycles, copy_cycles);
}

TEST(TimingModel, RowReductionsCostMoreThanColumnReductions) {
    // The same 32 x 64 f32 tile summed across the lanes of each row and down each column.
    auto reduce = [](Opcode op) { return marginal_sfu_cycles(op, {16384, 128, 0, 128, 32, 64, (int)DType::F32, 0}); };
    const MachineDescription m = builtin_machine();
    const double row = reduce(Opcode::RowSum), col = reduce(Opcode::ColSum);
    const double vector = std::ceil(32.0 * 64 * 4 / (m.sfu_bytes_per_cycle_per_corelet * m.corelets_per_core));
    const double expected = (vector * m.sfu_row_reduce_cost + 64 * m.sfu_row_reduce_row_cycles +
                             m.sfu_instruction_overhead_cycles) /
                            (vector + m.sfu_instruction_overhead_cycles);
    EXPECT_NEAR(row / col, expected, 0.05 * expected);
    EXPECT_GT(row, col);
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
