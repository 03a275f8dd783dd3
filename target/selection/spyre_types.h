// The mapping from Halide element types to Spyre dtypes, used by every part of
// the backend that names a tensor or an instruction's type.
#pragma once

#include <string>

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

// What to use instead of a Halide type Spyre has no dtype for (the fix a refusal names).
inline std::string spyre_type_fix(const Halide::Type &t) {
    if (t.is_bool()) return "keep a condition inside a select(), whose value has a Spyre type";
    if ((t.is_int() || t.is_uint()) && t.bits() <= 16) {
        return "cast it to int32 (every " + std::string(t.is_uint() ? "u" : "") + "int" + std::to_string(t.bits()) +
               " value fits, and the SFU computes in int32)" +
               (t.bits() == 8 ? ", or keep int8 where the values fit it" : std::string()) + ", or to float32";
    }
    if (t.is_int() || t.is_uint()) return "use int32 where the values fit, else float32";
    if (t.is_float() && t.bits() == 64) return "use float32";
    return "use float32, float16, int32 or int8";
}

}  // namespace compiler
}  // namespace spyre
