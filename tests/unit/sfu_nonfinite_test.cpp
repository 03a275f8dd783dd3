// The SFU's float semantics for inf, NaN, signed zeros and values past the f16
// range (docs/runtime.md, "Arithmetic"): every elementwise op over every pair
// of special operands is the IEEE-754 binary32 result rounded once to the
// destination type; min, max and the max reductions give NaN when an operand
// is NaN (IEEE 754-2019 minimum / maximum); a float max over a row of -inf is
// -inf (its identity is -inf, not the lowest finite float).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "program_builder.h"
#include "sfu_reference.h"
#include "spyre/dtype.h"

namespace spyre::testing {
namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
// Eight operands: each pair (a, b) of them is one lane, 64 lanes in all.
const float kSpecials[8] = {kNaN, kInf, -kInf, 0.0f, -0.0f, 1.0f, -2.5f, 3e38f};

void put(HostTensor &t, int64_t i, float v) {
    if (t.shape.dtype == DType::F32) {
        std::memcpy(&t.data[i * 4], &v, 4);
    } else {
        const uint16_t h = float_to_half(v);
        std::memcpy(&t.data[i * 2], &h, 2);
    }
}

bool same_float(float got, float expect) {
    if (std::isnan(expect)) return std::isnan(got);
    return got == expect && std::signbit(got) == std::signbit(expect);
}

class SfuNonFinite : public ::testing::TestWithParam<std::tuple<Opcode, DType>> {};

TEST_P(SfuNonFinite, EveryPairOfSpecialOperandsGivesTheIeeeResult) {
    const auto [op, t] = GetParam();
    const int64_t n = 64, eb = dtype_bytes(t), row_bytes = 128, rows = n * eb / row_bytes, lanes = row_bytes / eb;
    ProgramBuilder b("sfu_nonfinite");
    const int X = b.arg("X", ArgKind::Input, t, {lanes, rows});
    const int Y = b.arg("Y", ArgKind::Input, t, {lanes, rows});
    const int Z = b.arg("Z", ArgKind::Input, t, {lanes, rows});
    const int O = b.arg("O", ArgKind::Output, t, {lanes, rows});
    b.load(0, X, 0, 0, row_bytes, rows);
    b.load(0, Y, 0, 1024, row_bytes, rows);
    b.load(0, Z, 0, 2048, row_bytes, rows);
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Sfu, 0);
    const isa::OpcodeSpec &spec = isa::opcode_spec(op);
    if (spec.num_fields == isa::field::Copy::kNumFields) {
        b.emit(0, Unit::Sfu, op, {4096, row_bytes, 0, row_bytes, 0, lanes, rows, (int)t, 0});
    } else if (spec.num_fields == isa::field::Add::kNumFields) {
        b.emit(0, Unit::Sfu, op, {4096, row_bytes, 0, row_bytes, 0, 1024, row_bytes, 0, lanes, rows, (int)t, 0});
    } else {
        b.emit(0, Unit::Sfu, op,
               {4096, row_bytes, 0, row_bytes, 0, 1024, row_bytes, 0, 2048, row_bytes, 0, lanes, rows, (int)t, 0});
    }
    b.signal(0, Unit::Sfu, 1);
    b.wait(0, Unit::Dma, 1);
    b.store(0, O, 0, 4096, row_bytes, rows);
    TensorShape s;
    s.dtype = t;
    s.extent = {lanes, rows};
    HostTensor x = HostTensor::zeros("X", s), y = HostTensor::zeros("Y", s), z = HostTensor::zeros("Z", s);
    for (int64_t i = 0; i < n; i++) {
        put(x, i, kSpecials[i % 8]);
        put(y, i, kSpecials[i / 8]);
        put(z, i, kSpecials[(i + 3) % 8]);
    }
    HostRunResult r = run(b, {x, y, z});
    int nonfinite = 0;
    for (int64_t i = 0; i < n; i++) {
        const float a = as_float(x, i), bv = as_float(y, i), c = as_float(z, i);
        const float expect = round_to(t, sfu_reference(op, a, bv, c));
        const float got = as_float(r.outputs[0], i);
        EXPECT_TRUE(same_float(got, expect)) << spec.mnemonic << " " << dtype_name(t) << " (" << a << ", " << bv << ", "
                                             << c << ") gives " << got << ", IEEE-754 says " << expect;
        if (!std::isfinite(expect)) nonfinite++;
    }
    if (op != Opcode::CmpLt && op != Opcode::CmpLe && op != Opcode::CmpEq) {
        EXPECT_GT(nonfinite, 0) << "no lane has a non-finite result: the test could pass by accident";
    }
}

INSTANTIATE_TEST_SUITE_P(
    AllFloatOps, SfuNonFinite,
    ::testing::Combine(::testing::Values(Opcode::Copy, Opcode::Abs, Opcode::Neg, Opcode::Exp, Opcode::Log, Opcode::Tanh,
                                         Opcode::Erf, Opcode::Sqrt, Opcode::Rsqrt, Opcode::Recip, Opcode::Add,
                                         Opcode::Sub, Opcode::Mul, Opcode::Div, Opcode::Min, Opcode::Max, Opcode::CmpLt,
                                         Opcode::CmpLe, Opcode::CmpEq, Opcode::Fma, Opcode::Select),
                       ::testing::Values(DType::F32, DType::F16)),
    [](const auto &info) {
        return std::string(isa::opcode_spec(std::get<0>(info.param)).mnemonic + 4) + "_" +
               dtype_name(std::get<1>(info.param));
    });

// Four rows of 64 f32 lanes: all -inf; finite with a NaN in lane 17; a NaN in
// lane 0; finite with +inf in lane 40. Row maxima (no accumulator) and the
// column maxima over the four rows.
TEST(SfuNonFiniteReductions, MaxOfAllMinusInfIsMinusInfAndANaNAnywhereGivesNaN) {
    ProgramBuilder b("max_nonfinite");
    const int X = b.arg("X", ArgKind::Input, DType::F32, {64, 4});
    const int S = b.arg("S", ArgKind::Output, DType::F32, {32});
    const int C = b.arg("C", ArgKind::Output, DType::F32, {64});
    b.load(0, X, 0, 0, 256, 4);
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Sfu, 0);
    b.emit(0, Unit::Sfu, Opcode::Copy, {2048, 0, 0, 0, 2, 32, 1, (int)DType::F32, 0});
    b.emit(0, Unit::Sfu, Opcode::RowMax, {2048, 4, 0, 256, 64, 4, (int)DType::F32, 0});
    b.emit(0, Unit::Sfu, Opcode::ColMax, {4096, 0, 0, 256, 64, 4, (int)DType::F32, 0});
    b.signal(0, Unit::Sfu, 1);
    b.wait(0, Unit::Dma, 1);
    b.store(0, S, 0, 2048, 128);
    b.store(0, C, 0, 4096, 256);
    HostTensor x = random_tensor("X", DType::F32, {64, 4}, 31);
    for (int i = 0; i < 64; i++) put(x, i, -kInf);
    put(x, 64 + 17, kNaN);
    put(x, 128 + 0, kNaN);
    put(x, 192 + 40, kInf);
    HostRunResult r = run(b, {x});
    const HostTensor &rowmax = r.outputs[0], &colmax = r.outputs[1];
    EXPECT_TRUE(same_float(as_float(rowmax, 0), -kInf)) << "max of a row of -inf: " << as_float(rowmax, 0);
    EXPECT_TRUE(std::isnan(as_float(rowmax, 1))) << "max of a row with a NaN in lane 17: " << as_float(rowmax, 1);
    EXPECT_TRUE(std::isnan(as_float(rowmax, 2))) << "max of a row with a NaN in lane 0: " << as_float(rowmax, 2);
    EXPECT_EQ(as_float(rowmax, 3), kInf);
    for (int i = 0; i < 64; i++) {
        float expect = -kInf;
        for (int row = 1; row < 4; row++) expect = std::max(expect, as_float(x, row * 64 + i));
        if (i == 17 || i == 0) expect = kNaN;
        EXPECT_TRUE(same_float(as_float(colmax, i), expect)) << "column " << i << ": " << as_float(colmax, i);
    }
}

}  // namespace
}  // namespace spyre::testing
