// Test helper: what one SFU element operation gives, in float: IEEE-754
// binary32, with IEEE 754-2019 maximum / minimum for max and min (a NaN
// operand gives NaN, whichever side it is on). The simulator's f16 ops compute
// in f32 and round once (round_to). Shared by the SFU tests of every operand.
#pragma once

#include <cmath>
#include <limits>

#include "spyre/dtype.h"
#include "spyre/isa.h"

namespace spyre::testing {

inline float sfu_reference(isa::Opcode op, float a, float b, float c) {
    using isa::Opcode;
    switch (op) {
    case Opcode::Copy: return a;
    case Opcode::Abs: return std::fabs(a);
    case Opcode::Neg: return -a;
    case Opcode::Exp: return std::exp(a);
    case Opcode::Log: return std::log(a);
    case Opcode::Tanh: return std::tanh(a);
    case Opcode::Erf: return std::erf(a);
    case Opcode::Sqrt: return std::sqrt(a);
    case Opcode::Rsqrt: return 1.0f / std::sqrt(a);
    case Opcode::Recip: return 1.0f / a;
    case Opcode::Add: return a + b;
    case Opcode::Sub: return a - b;
    case Opcode::Mul: return a * b;
    case Opcode::Div: return a / b;
    case Opcode::Min: return std::isnan(a) || std::isnan(b) ? std::numeric_limits<float>::quiet_NaN() : (b < a ? b : a);
    case Opcode::Max: return std::isnan(a) || std::isnan(b) ? std::numeric_limits<float>::quiet_NaN() : (a < b ? b : a);
    case Opcode::CmpLt: return a < b ? 1.0f : 0.0f;
    case Opcode::CmpLe: return a <= b ? 1.0f : 0.0f;
    case Opcode::CmpEq: return a == b ? 1.0f : 0.0f;
    case Opcode::Fma: return a * b + c;
    case Opcode::Select: return a != 0.0f ? b : c;
    default: return std::numeric_limits<float>::quiet_NaN();
    }
}


inline float round_to(DType t, float v) { return t == DType::F16 ? half_to_float(float_to_half(v)) : v; }

}  // namespace spyre::testing
