// The simulated device, one instruction class at a time, against plain C++
// references on random non-constant data; then the rules it enforces and the
// synchronization modes.
#include <gtest/gtest.h>

#include <cmath>

#include "program_builder.h"
#include "sfu_reference.h"
#include "spyre/simulator.h"

namespace spyre::testing {
namespace {

bool non_constant(const HostTensor &t) {
    for (int64_t i = 1; i < t.elements(); i++) {
        if (as_float(t, i) != as_float(t, 0)) return true;
    }
    return false;
}

TEST(SimulatorDma, LoadZeroPadsRowsAndStoreWritesThemBack) {
    ProgramBuilder b("dma_pad");
    int A = b.arg("A", ArgKind::Input, DType::F32, {64, 10});   // 256-byte rows
    int Out = b.arg("Out", ArgKind::Output, DType::F32, {64, 12});
    // 12 rows into scratchpad, only the first 10 read from DRAM.
    b.emit(0, Unit::Dma, Opcode::DmaLoad, {A, 0, 0, 256, 256, 12, 256, 256, 10, 1, 0, 0, 1});
    b.store(0, Out, 0, 0, 256, 12);
    HostTensor a = random_tensor("A", DType::F32, {64, 10}, 1);
    ASSERT_TRUE(non_constant(a));
    auto r = run(b, {a});
    const HostTensor &out = r.outputs[0];
    for (int row = 0; row < 12; row++) {
        for (int x = 0; x < 64; x++) {
            float expect = row < 10 ? as_float(a, row * 64 + x) : 0.0f;
            ASSERT_EQ(as_float(out, row * 64 + x), expect) << "row " << row << " x " << x;
        }
    }
    EXPECT_EQ(r.sim.dram_read_bytes, 10u * 256);
    EXPECT_EQ(r.sim.dram_write_bytes, 12u * 256);
}

TEST(SimulatorDma, PlanesAndStridesGatherASubBlock) {
    ProgramBuilder b("dma_planes");
    int A = b.arg("A", ArgKind::Input, DType::F16, {128, 6, 4});  // rows of 256 bytes (2 sticks)
    int Out = b.arg("Out", ArgKind::Output, DType::F16, {64, 3, 2});  // rows of 128 bytes
    // Out(x, r, p) = A(64 + x, 2*r + 1, p + 2): second stick of odd rows of the last two planes.
    b.emit(0, Unit::Dma, Opcode::DmaLoad, {A, 2 * 6 * 256 + 256 + 128, 0, 128, 128, 3, 512, 128, 3, 2, 6 * 256, 384, 2});
    b.store(0, Out, 0, 0, 128, 6);
    HostTensor a = random_tensor("A", DType::F16, {128, 6, 4}, 2);
    auto r = run(b, {a});
    for (int p = 0; p < 2; p++)
        for (int row = 0; row < 3; row++)
            for (int x = 0; x < 64; x++)
                ASSERT_EQ(as_float(r.outputs[0], (p * 3 + row) * 64 + x), as_float(a, ((p + 2) * 6 + 2 * row + 1) * 128 + 64 + x));
}

TEST(SimulatorDma, ZeroPaddingOfPartialRowsFillsTheTail) {
    ProgramBuilder b("dma_valid_bytes");
    int A = b.arg("A", ArgKind::Input, DType::F32, {96, 2});  // 3 sticks per row
    int Out = b.arg("Out", ArgKind::Output, DType::F32, {96, 2});
    b.emit(0, Unit::Dma, Opcode::DmaLoad, {A, 0, 0, 384, 256, 2, 384, 384, 2, 1, 0, 0, 1});
    b.store(0, Out, 0, 0, 384, 2);
    auto r = run(b, {random_tensor("A", DType::F32, {96, 2}, 3)});
    HostTensor a = random_tensor("A", DType::F32, {96, 2}, 3);
    for (int row = 0; row < 2; row++)
        for (int x = 0; x < 96; x++) ASSERT_EQ(as_float(r.outputs[0], row * 96 + x), x < 64 ? as_float(a, row * 96 + x) : 0.0f);
}

// C(n, m) = sum_k A(k, m) * B(n, k), k in increasing order, one rounding per op.
std::vector<float> reference_matmul(const HostTensor &a, const HostTensor &bt, int m, int n, int k) {
    std::vector<float> c(m * n, 0.0f);
    for (int i = 0; i < m; i++)
        for (int kk = 0; kk < k; kk++)
            for (int j = 0; j < n; j++) c[i * n + j] = c[i * n + j] + as_float(a, i * k + kk) * as_float(bt, kk * n + j);
    return c;
}

void run_matmul_case(DType t, bool split_k) {
    const int M = 8, N = 48, K = 40;
    ProgramBuilder b("matmul");
    int A = b.arg("A", ArgKind::Input, t, {K, M});
    int B = b.arg("B", ArgKind::Input, t, {N, K});
    const DType acc = t == DType::I8 ? DType::I32 : DType::F32;
    int C = b.arg("C", ArgKind::Output, acc, {N, M});
    const int64_t arow = 128, brow = 128;   // one stick per row for K=40 f16/i8, N=48 f16/i8
    const int64_t a_row = t == DType::F32 ? 256 : arow, b_row = t == DType::F32 ? 256 : brow;
    const int64_t crow = 256;               // 64 f32/i32 lanes
    const int64_t npad = 64;
    b.load(0, A, 0, 0, a_row, M);
    b.load(0, B, 0, 4096, b_row, K);
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Pt, 0);
    if (split_k) {
        b.emit(0, Unit::Pt, Opcode::Matmul, {32768, crow, 0, a_row, 4096, b_row, M, npad, 24, (int)t, 0});
        const int64_t eb = dtype_bytes(t);
        b.emit(0, Unit::Pt, Opcode::Matmul, {32768, crow, 24 * eb, a_row, 4096 + 24 * b_row, b_row, M, npad, K - 24, (int)t, 1});
    } else {
        b.emit(0, Unit::Pt, Opcode::Matmul, {32768, crow, 0, a_row, 4096, b_row, M, npad, K, (int)t, 0});
    }
    b.signal(0, Unit::Pt, 1);
    b.wait(0, Unit::Dma, 1);
    b.store(0, C, 0, 32768, crow, M);
    HostTensor a = random_tensor("A", t, {K, M}, 11), bt = random_tensor("B", t, {N, K}, 12);
    auto r = run(b, {a, bt});
    auto ref = reference_matmul(a, bt, M, N, K);
    double maxabs = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            ASSERT_EQ(as_float(r.outputs[0], i * N + j), ref[i * N + j]) << "m " << i << " n " << j;
            maxabs = std::max(maxabs, (double)std::fabs(ref[i * N + j]));
        }
    EXPECT_GT(maxabs, 0.5);  // the reference is not trivial
    EXPECT_EQ(r.sim.macs, (uint64_t)M * npad * K);
}

TEST(SimulatorPt, MatmulF32IsBitExact) { run_matmul_case(DType::F32, false); }
TEST(SimulatorPt, MatmulF16AccumulatesInF32) { run_matmul_case(DType::F16, false); }
TEST(SimulatorPt, MatmulI8AccumulatesInI32) { run_matmul_case(DType::I8, false); }
TEST(SimulatorPt, MatmulAccumulateFlagContinuesTheSum) { run_matmul_case(DType::F32, true); }

// One SFU instruction over 3 rows x 32 lanes; returns the output and the inputs.
struct SfuCase {
    HostTensor x, y, z, out;
};

SfuCase run_sfu(Opcode op, DType t, int modes_b = 0, float imm = 0.0f, std::vector<double> params = {}) {
    const int64_t lanes = 32, rows = 3;
    ProgramBuilder b("sfu");
    for (size_t i = 0; i < params.size(); i++) b.p.params.push_back({"p" + std::to_string(i), DType::F32});
    int X = b.arg("X", ArgKind::Input, t, {lanes, rows});
    int Y = b.arg("Y", ArgKind::Input, t, {lanes, rows});
    int Z = b.arg("Z", ArgKind::Input, t, {lanes, rows});
    int O = b.arg("O", ArgKind::Output, t, {lanes, rows});
    const int64_t row = 128;  // bytes per stick row
    const int64_t eb = dtype_bytes(t);
    const int64_t tlanes = 128 / eb;
    b.load(0, X, 0, 0, row, rows);
    b.load(0, Y, 0, 1024, row, rows);
    b.load(0, Z, 0, 2048, row, rows);
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Sfu, 0);
    const uint32_t immv = dtype_is_float(t) ? f32_bits(imm) : (uint32_t)(int32_t)imm;
    const isa::OpcodeSpec &spec = isa::opcode_spec(op);
    const int64_t n = tlanes;  // whole sticks: the padding lanes are zero from the DMA
    if (spec.num_fields == isa::field::Copy::kNumFields) {
        b.emit(0, Unit::Sfu, op, {4096, row, 0, row, 0, n, rows, (int)t, immv});
    } else if (spec.num_fields == isa::field::Add::kNumFields) {
        b.emit(0, Unit::Sfu, op, {4096, row, 0, row, 0, 1024, row, modes_b, n, rows, (int)t, immv});
    } else {
        b.emit(0, Unit::Sfu, op, {4096, row, 0, row, 0, 1024, row, modes_b, 2048, row, 0, n, rows, (int)t, immv});
    }
    b.signal(0, Unit::Sfu, 1);
    b.wait(0, Unit::Dma, 1);
    // Initialise the stick tails the op did not write, so the store reads only written bytes.
    b.store(0, O, 0, 4096, row, rows);
    SfuCase c;
    c.x = random_tensor("X", t, {lanes, rows}, 21);
    c.y = random_tensor("Y", t, {lanes, rows}, 22);
    c.z = random_tensor("Z", t, {lanes, rows}, 23);
    // Positive inputs for log/sqrt/rsqrt.
    if (op == Opcode::Log || op == Opcode::Sqrt || op == Opcode::Rsqrt) {
        for (int64_t i = 0; i < c.x.elements(); i++) {
            float v = std::fabs(as_float(c.x, i)) + 0.1f;
            if (t == DType::F32) std::memcpy(&c.x.data[i * 4], &v, 4);
            else {
                uint16_t h = float_to_half(v);
                std::memcpy(&c.x.data[i * 2], &h, 2);
            }
        }
    }
    auto r = run(b, {c.x, c.y, c.z}, params);
    c.out = r.outputs[0];
    return c;
}

class SfuElementwise : public ::testing::TestWithParam<std::tuple<Opcode, DType>> {};

TEST_P(SfuElementwise, MatchesTheReferenceExactly) {
    auto [op, t] = GetParam();
    SfuCase c = run_sfu(op, t);
    const int64_t n = std::min<int64_t>(32, 128 / dtype_bytes(t));
    int differing = 0;
    for (int row = 0; row < 3; row++)
        for (int i = 0; i < n; i++) {
            const int64_t e = row * 32 + i;
            float expect = round_to(t, sfu_reference(op, as_float(c.x, e), as_float(c.y, e), as_float(c.z, e)));
            float got = as_float(c.out, e);
            ASSERT_TRUE(got == expect || (std::isnan(got) && std::isnan(expect)))
                << isa::opcode_spec(op).mnemonic << " " << dtype_name(t) << " element " << e << ": " << got << " vs " << expect;
            if (got != as_float(c.out, 0)) differing++;
        }
    EXPECT_GT(differing, 0) << "output is constant: the test could pass by accident";
}

INSTANTIATE_TEST_SUITE_P(
    AllOps, SfuElementwise,
    ::testing::Combine(::testing::Values(Opcode::Copy, Opcode::Abs, Opcode::Neg, Opcode::Exp, Opcode::Log, Opcode::Tanh,
                                         Opcode::Erf, Opcode::Sqrt, Opcode::Rsqrt, Opcode::Recip, Opcode::Add, Opcode::Sub,
                                         Opcode::Mul, Opcode::Div, Opcode::Min, Opcode::Max, Opcode::Fma, Opcode::Select),
                       ::testing::Values(DType::F32, DType::F16)),
    [](const auto &info) {
        return std::string(isa::opcode_spec(std::get<0>(info.param)).mnemonic + 4) + "_" +
               dtype_name(std::get<1>(info.param));
    });

TEST(SimulatorSfu, IntegerArithmeticWrapsLikeTheHost) {
    SfuCase c = run_sfu(Opcode::Mul, DType::I8);
    for (int64_t e = 0; e < 32; e++) {
        int8_t expect = (int8_t)(uint8_t)(as_float(c.x, e) * as_float(c.y, e));
        ASSERT_EQ((int8_t)c.out.data[e], expect);
    }
    SfuCase d = run_sfu(Opcode::Sub, DType::I32);
    for (int64_t e = 0; e < 32; e++) ASSERT_EQ(element<int32_t>(d.out, e), element<int32_t>(d.x, e) - element<int32_t>(d.y, e));
}

TEST(SimulatorSfu, ComparisonsGiveOneOrZero) {
    for (Opcode op : {Opcode::CmpLt, Opcode::CmpLe, Opcode::CmpEq}) {
        SfuCase c = run_sfu(op, DType::F32);
        for (int64_t e = 0; e < 32; e++) {
            ASSERT_EQ(as_float(c.out, e), sfu_reference(op, as_float(c.x, e), as_float(c.y, e), 0));
        }
    }
}

TEST(SimulatorSfu, ScalarImmediateAndParameterOperandsBroadcast) {
    // mode 1: b is the first element of each row of Y.
    SfuCase s = run_sfu(Opcode::Add, DType::F32, 1);
    for (int row = 0; row < 3; row++)
        for (int i = 0; i < 32; i++) ASSERT_EQ(as_float(s.out, row * 32 + i), as_float(s.x, row * 32 + i) + as_float(s.y, row * 32));
    // mode 2: immediate 0.75.
    SfuCase im = run_sfu(Opcode::Mul, DType::F32, 2, 0.75f);
    for (int e = 0; e < 96; e++) ASSERT_EQ(as_float(im.out, e), as_float(im.x, e) * 0.75f);
    // mode 3: run-time parameter 0 (imm holds its index).
    SfuCase pr = run_sfu(Opcode::Sub, DType::F32, 3, 0.0f, {2.5});
    for (int e = 0; e < 96; e++) ASSERT_EQ(as_float(pr.out, e), as_float(pr.x, e) - 2.5f);
}

TEST(SimulatorSfu, CastsRoundSaturateAndWrap) {
    ProgramBuilder b("cast");
    int X = b.arg("X", ArgKind::Input, DType::F32, {32});
    int H = b.arg("H", ArgKind::Output, DType::F16, {64});
    int I = b.arg("I", ArgKind::Output, DType::I32, {32});
    int Q = b.arg("Q", ArgKind::Output, DType::I8, {128});
    b.load(0, X, 0, 0, 128);
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Sfu, 0);
    // f32 -> f16 (whole stick: 64 lanes, the upper 32 from a zero stick), f32 -> i32 after x*100, i32 -> i8.
    b.emit(0, Unit::Sfu, Opcode::Copy, {256, 0, 0, 0, 2, 32, 1, (int)DType::F32, f32_bits(0)});  // zeros at 256
    b.emit(0, Unit::Sfu, Opcode::Cast, {512, 0, (int)DType::F16, 0, 0, 32, 1, (int)DType::F32});
    b.emit(0, Unit::Sfu, Opcode::Cast, {512 + 64, 0, (int)DType::F16, 256, 0, 32, 1, (int)DType::F32});
    b.emit(0, Unit::Sfu, Opcode::Mul, {1024, 0, 0, 0, 0, 0, 0, 2, 32, 1, (int)DType::F32, f32_bits(300.0f)});
    b.emit(0, Unit::Sfu, Opcode::Cast, {1536, 0, (int)DType::I32, 1024, 0, 32, 1, (int)DType::F32});
    b.emit(0, Unit::Sfu, Opcode::Copy, {2048, 0, 0, 0, 2, 128, 1, (int)DType::I8, 0});  // zero stick of i8
    b.emit(0, Unit::Sfu, Opcode::Cast, {2048, 0, (int)DType::I8, 1536, 0, 32, 1, (int)DType::I32});
    b.signal(0, Unit::Sfu, 1);
    b.wait(0, Unit::Dma, 1);
    b.store(0, H, 0, 512, 128);
    b.store(0, I, 0, 1536, 128);
    b.store(0, Q, 0, 2048, 128);
    HostTensor x = random_tensor("X", DType::F32, {32}, 5);
    auto r = run(b, {x});
    for (int i = 0; i < 32; i++) {
        float v = as_float(x, i);
        ASSERT_EQ(as_float(r.outputs[0], i), half_to_float(float_to_half(v)));
        int32_t iv = (int32_t)(v * 300.0f);
        ASSERT_EQ(element<int32_t>(r.outputs[1], i), iv);
        ASSERT_EQ((int8_t)r.outputs[2].data[i], (int8_t)(uint8_t)(uint32_t)iv);
    }
}

TEST(SimulatorSfu, RowAndColumnReductions) {
    ProgramBuilder b("reduce");
    int X = b.arg("X", ArgKind::Input, DType::F32, {64, 4});  // 4 rows of 2 sticks
    int S = b.arg("S", ArgKind::Output, DType::F32, {32});    // row sums then row maxes at lanes 0..3 and 8..11
    int C = b.arg("C", ArgKind::Output, DType::F32, {64, 2}); // column sum, column max
    b.load(0, X, 0, 0, 256, 4);
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Sfu, 0);
    b.emit(0, Unit::Sfu, Opcode::Copy, {2048, 0, 0, 0, 2, 32, 1, (int)DType::F32, 0});
    b.emit(0, Unit::Sfu, Opcode::RowSum, {2048, 4, 0, 256, 64, 4, (int)DType::F32, 0});
    b.emit(0, Unit::Sfu, Opcode::RowMax, {2048 + 32, 4, 0, 256, 64, 4, (int)DType::F32, 0});
    b.emit(0, Unit::Sfu, Opcode::ColSum, {4096, 0, 0, 256, 64, 3, (int)DType::F32, 0});
    b.emit(0, Unit::Sfu, Opcode::ColSum, {4096, 0, 768, 256, 64, 1, (int)DType::F32, 1});  // accumulate row 3
    b.emit(0, Unit::Sfu, Opcode::ColMax, {4096 + 256, 0, 0, 256, 64, 4, (int)DType::F32, 0});
    b.signal(0, Unit::Sfu, 1);
    b.wait(0, Unit::Dma, 1);
    b.store(0, S, 0, 2048, 128);
    b.store(0, C, 0, 4096, 256, 2);
    HostTensor x = random_tensor("X", DType::F32, {64, 4}, 9);
    auto r = run(b, {x});
    for (int row = 0; row < 4; row++) {
        float s = 0, mx = -INFINITY;
        for (int i = 0; i < 64; i++) {
            s = s + as_float(x, row * 64 + i);
            mx = std::max(mx, as_float(x, row * 64 + i));
        }
        ASSERT_EQ(as_float(r.outputs[0], row), s);
        ASSERT_EQ(as_float(r.outputs[0], 8 + row), mx);
    }
    for (int i = 0; i < 64; i++) {
        float s = 0, mx = -INFINITY;
        for (int row = 0; row < 4; row++) {
            s = s + as_float(x, row * 64 + i);
            mx = std::max(mx, as_float(x, row * 64 + i));
        }
        ASSERT_EQ(as_float(r.outputs[1], i), s);
        ASSERT_EQ(as_float(r.outputs[1], 64 + i), mx);
    }
}

TEST(SimulatorRing, PutCopiesIntoAnotherCoreAndSignalsIt) {
    ProgramBuilder b("ring");
    int A = b.arg("A", ArgKind::Input, DType::F16, {64, 4});
    int Out = b.arg("Out", ArgKind::Output, DType::F16, {64, 4});
    b.load(0, A, 0, 0, 128, 4);
    b.emit(0, Unit::Dma, Opcode::RingPut, {5, 0, 8192, 512, 2});
    b.wait(5, Unit::Dma, 2);
    b.store(5, Out, 0, 8192, 128, 4);
    HostTensor a = random_tensor("A", DType::F16, {64, 4}, 31);
    auto r = run(b, {a});
    EXPECT_EQ(r.outputs[0].data, a.data);
    EXPECT_EQ(r.sim.ring_bytes, 512u);
}

TEST(SimulatorBarrier, OrdersDramTrafficAcrossCores) {
    ProgramBuilder b("barrier");
    int A = b.arg("A", ArgKind::Input, DType::F32, {32, 8});
    int T = b.arg("T", ArgKind::Temp, DType::F32, {32, 8});
    int Out = b.arg("Out", ArgKind::Output, DType::F32, {32, 8});
    b.load(0, A, 0, 0, 128, 8);
    b.store(0, T, 0, 0, 128, 8);
    b.emit(0, Unit::Dma, Opcode::Barrier, {3, 2});
    b.emit(7, Unit::Dma, Opcode::Barrier, {3, 2});
    b.load(7, T, 0, 0, 128, 8);
    b.store(7, Out, 0, 0, 128, 8);
    HostTensor a = random_tensor("A", DType::F32, {32, 8}, 41);
    SimulationOptions opt;
    opt.record_trace = true;
    auto r = run(b, {a}, {}, opt);
    EXPECT_EQ(r.outputs[0].data, a.data);
    double core0_store_end = 0, core7_load_start = -1;
    for (const auto &e : r.sim.trace) {
        if (e.core == 0 && e.op == Opcode::DmaStore) core0_store_end = e.end_cycle;
        if (e.core == 7 && e.op == Opcode::DmaLoad) core7_load_start = e.start_cycle;
    }
    EXPECT_GE(core7_load_start, core0_store_end);
}

// ---- rules the simulator enforces ----

std::string run_expecting_violation(const ProgramBuilder &b, const std::vector<HostTensor> &inputs) {
    try {
        run(b, inputs);
    } catch (const SimulationError &e) {
        return e.what();
    }
    ADD_FAILURE() << "expected a SimulationError";
    return "";
}

TEST(SimulatorRules, ScratchpadOutOfBoundsNamesCoreUnitAndInstruction) {
    ProgramBuilder b("oob");
    int A = b.arg("A", ArgKind::Input, DType::F32, {32});
    b.load(3, A, 0, 0, 128);
    b.signal(3, Unit::Dma, 0);
    b.wait(3, Unit::Sfu, 0);
    b.emit(3, Unit::Sfu, Opcode::Copy, {b.m.scratchpad_bytes - 64, 0, 0, 0, 0, 32, 1, (int)DType::F32, 0});
    std::string msg = run_expecting_violation(b, {random_tensor("A", DType::F32, {32}, 1)});
    EXPECT_NE(msg.find("core 3, sfu instruction 1 (sfu.copy"), std::string::npos) << msg;
    EXPECT_NE(msg.find("outside the core's own 2097152-byte scratchpad"), std::string::npos) << msg;
}

TEST(SimulatorRules, DmaMustMoveWholeSticks) {
    ProgramBuilder b("partial_stick");
    int A = b.arg("A", ArgKind::Input, DType::F32, {32, 2});
    b.emit(0, Unit::Dma, Opcode::DmaLoad, {A, 0, 0, 100, 100, 1, 128, 128, 1, 1, 0, 0, 1});
    std::string msg = run_expecting_violation(b, {random_tensor("A", DType::F32, {32, 2}, 1)});
    EXPECT_NE(msg.find("DMA not in whole sticks: row_bytes = 100"), std::string::npos) << msg;
}

TEST(SimulatorRules, ReadingScratchpadNeverWrittenIsReported) {
    ProgramBuilder b("poison");
    int A = b.arg("A", ArgKind::Input, DType::F32, {32});
    int O = b.arg("O", ArgKind::Output, DType::F32, {32});
    b.load(0, A, 0, 0, 128);
    b.store(0, O, 0, 128, 128);  // 128..256 was never written
    std::string msg = run_expecting_violation(b, {random_tensor("A", DType::F32, {32}, 1)});
    EXPECT_NE(msg.find("reads scratchpad byte 128 which was never written"), std::string::npos) << msg;
}

// A unit touching scratchpad bytes another unit's transfer or instruction still occupies (one of
// them writing) is refused, even when the functional result would come out right.
TEST(SimulatorRules, ReadingBytesADmaIsStillLandingIsAMissingWait) {
    auto program = [](bool with_wait) {
        ProgramBuilder b(with_wait ? "waited" : "unwaited");
        int A = b.arg("A", ArgKind::Input, DType::F32, {32});
        int O = b.arg("O", ArgKind::Output, DType::F32, {32});
        b.load(0, A, 0, 0, 128);
        if (with_wait) {
            b.signal(0, Unit::Dma, 2);  // DMA -> SFU
            b.wait(0, Unit::Sfu, 2);
        }
        b.emit(0, Unit::Sfu, Opcode::Copy, {256, 0, 0, 0, 0, 32, 1, (int)DType::F32, 0});
        b.signal(0, Unit::Sfu, 6);  // SFU -> DMA
        b.wait(0, Unit::Dma, 6);
        b.store(0, O, 0, 256, 128);
        return b;
    };
    const HostTensor a = random_tensor("A", DType::F32, {32}, 3);
    std::string msg = run_expecting_violation(program(false), {a});
    EXPECT_NE(msg.find("core 0, sfu instruction 0 (sfu.copy"), std::string::npos) << msg;
    EXPECT_NE(msg.find("SFU operand a [0, 128) reads at cycle 0.0 scratchpad bytes that dma.load destination [0, 128) "
                       "(the DMA unit) is still writing"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("a wait between the two is missing"), std::string::npos) << msg;
    auto r = run(program(true), {a});
    EXPECT_EQ(r.outputs[0].data, a.data);
}

TEST(SimulatorRules, OverwritingBytesAStoreIsStillReadingIsAMissingWait) {
    ProgramBuilder b("store_then_overwrite");
    int A = b.arg("A", ArgKind::Input, DType::F32, {16384});
    int O = b.arg("O", ArgKind::Output, DType::F32, {16384});
    b.load(0, A, 0, 0, 65536);
    b.signal(0, Unit::Dma, 2);
    b.wait(0, Unit::Sfu, 2);
    b.store(0, O, 0, 0, 65536);  // 64 KiB: still reading [0, 128) when the SFU overwrites it
    b.emit(0, Unit::Sfu, Opcode::Copy, {0, 0, 0, 0, 2, 32, 1, (int)DType::F32, 0});
    std::string msg = run_expecting_violation(b, {random_tensor("A", DType::F32, {16384}, 4)});
    EXPECT_NE(msg.find("SFU destination [0, 128) writes at cycle"), std::string::npos) << msg;
    EXPECT_NE(msg.find("dma.store source [0, 65536) (the DMA unit) is still reading"), std::string::npos) << msg;
}

TEST(SimulatorRules, InterleavedRowsOfTwoUnitsDoNotConflict) {
    // The DMA loads the even sticks of a region while the SFU writes the odd ones: the bounding
    // intervals overlap, the bytes do not.
    ProgramBuilder b("interleaved");
    int A = b.arg("A", ArgKind::Input, DType::F32, {32, 4});
    int O = b.arg("O", ArgKind::Output, DType::F32, {32, 8});
    // rows of 128 bytes at sp 0, 256, 512, 768
    b.emit(0, Unit::Dma, Opcode::DmaLoad, {A, 0, 0, 128, 128, 4, 128, 256, 4, 1, 0, 0, 1});
    b.emit(0, Unit::Sfu, Opcode::Copy, {128, 256, 0, 0, 2, 32, 4, (int)DType::F32, 0});  // 128, 384, 640, 896
    b.signal(0, Unit::Sfu, 6);
    b.wait(0, Unit::Dma, 6);
    b.store(0, O, 0, 0, 1024);
    auto r = run(b, {random_tensor("A", DType::F32, {32, 4}, 5)});
    EXPECT_GT(r.sim.cycles, 0.0);
}

TEST(SimulatorTiming, AStoreOfBytesItsUnitIsStillLoadingWaitsForThemToLand) {
    // The DMA unit loads a tile and stores it right back: the store may not read the bytes before
    // the load's access latency has passed. A store of other bytes does not wait for them.
    auto load_end_and_store_start = [](int64_t store_sp) {
        ProgramBuilder b("load_then_store");
        int A = b.arg("A", ArgKind::Input, DType::F32, {32});
        int O = b.arg("O", ArgKind::Output, DType::F32, {32});
        b.load(0, A, 0, 0, 128);
        b.store(0, O, 0, store_sp, 128);
        SimulationOptions o;
        o.functional = false;
        o.check_uninitialized = false;  // the store of never-written bytes is fine here: only its timing matters
        o.record_trace = true;
        const HostRunResult r = run(b, {random_tensor("A", DType::F32, {32}, 6)}, {}, o);
        double load_end = -1, store_start = -1;
        for (const auto &e : r.sim.trace) {
            if (e.core == 0 && e.op == Opcode::DmaLoad) load_end = e.end_cycle;
            if (e.core == 0 && e.op == Opcode::DmaStore) store_start = e.start_cycle;
        }
        return std::make_pair(load_end, store_start);
    };
    const double latency = builtin_machine().dma_latency_cycles;
    const auto [end_same, start_same] = load_end_and_store_start(0);
    EXPECT_GE(start_same, end_same + latency) << "the store reads the bytes the load is landing";
    const auto [end_other, start_other] = load_end_and_store_start(8192);
    EXPECT_LT(start_other, end_other + latency) << "the store reads other bytes";
}

TEST(SimulatorRules, DramAccessOutsideTheAllocationIsReported) {
    ProgramBuilder b("dram_oob");
    int A = b.arg("A", ArgKind::Input, DType::F32, {32, 4});
    b.load(0, A, 384, 0, 128, 2);  // rows at 384 and 512: the second is past the 512-byte tensor
    std::string msg = run_expecting_violation(b, {random_tensor("A", DType::F32, {32, 4}, 1)});
    EXPECT_NE(msg.find("DRAM bytes [512, 640) are outside the tensor's 512-byte allocation"), std::string::npos) << msg;
}

TEST(SimulatorRules, TokenDeadlockIsReportedWithTheWaitingUnits) {
    ProgramBuilder b("deadlock");
    int A = b.arg("A", ArgKind::Input, DType::F32, {32});
    b.wait(2, Unit::Dma, 4);  // nobody signals 4
    b.load(2, A, 0, 0, 128);
    b.signal(2, Unit::Dma, 5);
    b.wait(2, Unit::Sfu, 5);
    std::string msg = run_expecting_violation(b, {random_tensor("A", DType::F32, {32}, 1)});
    EXPECT_NE(msg.find("deadlock in 'deadlock': 2 unit(s) wait forever"), std::string::npos) << msg;
    EXPECT_NE(msg.find("core 2, dma instruction 0: wait on token channel 4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("core 2, sfu instruction 0: wait on token channel 5"), std::string::npos) << msg;
}

TEST(SimulatorRules, BarrierWithMissingParticipantDeadlocks) {
    ProgramBuilder b("barrier_deadlock");
    b.arg("A", ArgKind::Input, DType::F32, {32});
    b.emit(0, Unit::Dma, Opcode::Barrier, {1, 3});
    b.emit(1, Unit::Dma, Opcode::Barrier, {1, 3});
    std::string msg = run_expecting_violation(b, {random_tensor("A", DType::F32, {32}, 1)});
    EXPECT_NE(msg.find("barrier 1 with 2 of 3 participants arrived"), std::string::npos) << msg;
}

// Two cores storing into the same DRAM bytes with nothing ordering the two stores (race2.s of the
// reliability reproducers): which core's bytes win depends on timing. Refused, naming both.
TEST(SimulatorRules, TwoCoresStoringTheSameDramBytesUnorderedIsARace) {
    auto program = [](const char *order) {
        ProgramBuilder b(order);
        const int A = b.arg("A", ArgKind::Input, DType::F32, {32, 4});
        const int Out = b.arg("Out", ArgKind::Output, DType::F32, {32, 6});
        b.load(0, A, 0, 0, 128, 3);
        b.load(1, A, 3 * 128, 0, 128);
        // Core 0 writes rows 0, 2 and 4 of Out in one strided store; core 1 writes row 2, with
        // nothing between, after a barrier, or after core 0's ring.put into it (or row 1 instead).
        b.store(0, Out, 0, 0, 128, 3, 256);
        if (std::string(order) == "barrier") {
            b.emit(0, Unit::Dma, Opcode::Barrier, {2, 2});
            b.emit(1, Unit::Dma, Opcode::Barrier, {2, 2});
        } else if (std::string(order) == "ring") {
            b.emit(0, Unit::Dma, Opcode::RingPut, {1, 0, 4096, 128, 9});
            b.wait(1, Unit::Dma, 9);
        } else if (std::string(order) == "disjoint") {
            b.store(1, Out, 128, 0, 128);
            return b;
        }
        b.store(1, Out, 2 * 128, 0, 128);
        return b;
    };
    const HostTensor a = random_tensor("A", DType::F32, {32, 4}, 7);
    std::string msg;
    try {
        run(program("unordered"), {a});
    } catch (const SimulationError &e) {
        msg = e.what();
    }
    // Core 1 (one row to load) stores first; core 0's store is the one that races it.
    EXPECT_NE(msg.find("core 0, dma instruction 1 (dma.store"), std::string::npos) << msg;
    EXPECT_NE(msg.find("dma.store writes bytes [256, 384) of 'Out' in DRAM that core 1 (dma instruction 1) also writes, "
                       "with no ring transfer or barrier between the two: a race between two cores"),
              std::string::npos)
        << msg;
    // Checked in functional runs only (like poison tracking): a timing-only run gives its cycles.
    SimulationOptions timing_only;
    timing_only.functional = false;
    EXPECT_GT(run(program("unordered"), {a}, {}, timing_only).sim.cycles, 0);
    // Ordered by a barrier or a ring transfer, or writing other bytes: no race.
    const HostRunResult barrier = run(program("barrier"), {a});
    EXPECT_EQ(std::vector<uint8_t>(barrier.outputs[0].data.begin() + 256, barrier.outputs[0].data.begin() + 384),
              std::vector<uint8_t>(a.data.begin() + 384, a.data.begin() + 512));
    run(program("ring"), {a});
    run(program("disjoint"), {a});
}

// One core may store into the same DRAM bytes again (its DMA unit runs in order); a store of
// another core into bytes next to them is no race either.
TEST(SimulatorRules, OneCoreRewritingItsDramBytesAndNeighboursTouchingThemAreNoRace) {
    ProgramBuilder b("rewrite");
    const int A = b.arg("A", ArgKind::Input, DType::F32, {32, 4});
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {32, 4});
    b.load(0, A, 0, 0, 128, 4);
    b.load(1, A, 0, 0, 128, 4);
    for (int i = 0; i < 3; i++) b.store(0, Out, 0, 0, 128, 2);  // rows 0-1, three times
    b.store(0, Out, 128, 0, 128);                                // row 1 again, another instruction
    b.store(1, Out, 2 * 128, 0, 128, 2);                         // rows 2-3: touching, not overlapping
    run(b, {random_tensor("A", DType::F32, {32, 4}, 8)});
}

// ---- timing and synchronization modes ----

ProgramBuilder pipelined_scale_program() {
    // Every core scales its 8 rows of X by 3 with a double-buffered DMA/SFU pipeline.
    ProgramBuilder b("scale");
    int X = b.arg("X", ArgKind::Input, DType::F16, {64, 256});
    int Y = b.arg("Y", ArgKind::Output, DType::F16, {64, 256});
    for (int c = 0; c < 32; c++) {
        for (int i = 0; i < 8; i++) {
            int64_t row = c * 8 + i, buf = (i % 2) * 128;
            if (i >= 2) b.wait(c, Unit::Dma, 2);  // buffer free again
            b.load(c, X, row * 128, buf, 128);
            b.signal(c, Unit::Dma, 0);
            b.wait(c, Unit::Sfu, 0);
            b.emit(c, Unit::Sfu, Opcode::Mul, {1024 + buf, 0, buf, 0, 0, 0, 0, 2, 64, 1, (int)DType::F16, f32_bits(3.0f)});
            b.signal(c, Unit::Sfu, 1);
            b.wait(c, Unit::Dma, 1);
            b.store(c, Y, row * 128, 1024 + buf, 128);
            b.signal(c, Unit::Dma, 2);
        }
    }
    return b;
}

TEST(SimulatorTiming, TimingOnlyModeReportsTheSameCycles) {
    ProgramBuilder b = pipelined_scale_program();
    HostTensor x = random_tensor("X", DType::F16, {64, 256}, 7);
    auto functional = run(b, {x});
    SimulationOptions t;
    t.functional = false;
    auto timing = run(b, {x}, {}, t);
    EXPECT_GT(functional.sim.cycles, 0);
    EXPECT_EQ(functional.sim.cycles, timing.sim.cycles);
    EXPECT_EQ(functional.sim.dram_read_bytes, timing.sim.dram_read_bytes);
}

TEST(SimulatorTiming, SynchronizationModesChangeTimeNotResults) {
    ProgramBuilder b = pipelined_scale_program();
    HostTensor x = random_tensor("X", DType::F16, {64, 256}, 7);
    auto normal = run(b, {x});
    SimulationOptions serial;
    serial.sync = SyncMode::ForcedSerial;
    SimulationOptions random;
    random.sync = SyncMode::RandomLatency;
    random.seed = 99;
    auto s = run(b, {x}, {}, serial);
    auto r = run(b, {x}, {}, random);
    EXPECT_EQ(normal.outputs[0].data, s.outputs[0].data);
    EXPECT_EQ(normal.outputs[0].data, r.outputs[0].data);
    EXPECT_GT(s.sim.cycles, normal.sim.cycles);
    EXPECT_NE(r.sim.cycles, normal.sim.cycles);
    for (int i = 0; i < 64 * 256; i++) ASSERT_EQ(as_float(normal.outputs[0], i), round_to(DType::F16, as_float(x, i) * 3.0f));
}

TEST(SimulatorTiming, SameProgramSameCycles) {
    ProgramBuilder b = pipelined_scale_program();
    HostTensor x = random_tensor("X", DType::F16, {64, 256}, 7);
    EXPECT_EQ(run(b, {x}).sim.cycles, run(b, {x}).sim.cycles);
}

}  // namespace
}  // namespace spyre::testing
