// The mapping from Halide element types to Spyre dtypes, used by every part of
// the backend that names a tensor or an instruction's type.
#pragma once

#include "Halide.h"
#include "spyre/dtype.h"

namespace spyre {
namespace compiler {

// Spyre dtype of a Halide (scalar) type; false when Spyre has no such type.
inline bool spyre_dtype(const Halide::Type &t, DType *out) {
    if (t.is_float() && t.bits() == 32) *out = DType::F32;
    else if (t.is_float() && t.bits() == 16) *out = DType::F16;
    else if (t.is_int() && t.bits() == 32) *out = DType::I32;
    else if (t.is_int() && t.bits() == 8) *out = DType::I8;
    else return false;
    return true;
}

}  // namespace compiler
}  // namespace spyre
