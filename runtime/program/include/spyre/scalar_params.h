// Scalar run-time parameters of a program (ScalarParam, program.h): the
// values a dtype can hold, and strict parsing of a parameter's value from text
// (spyre-run --param NAME=VALUE).
//
// Parameters travel as doubles (simulate_program, spyre_run_program). An
// integer parameter must hold a whole number inside its type's range: the
// simulator converts it to that type, and converting a double outside it (or
// a fraction the caller did not mean) would be undefined or silently wrong.
// A float parameter may hold any double that is not finite-but-too-large for
// its type (inf and NaN are values of the type; 1e39 as an f32 is not).
#pragma once

#include <string>
#include <vector>

#include "spyre/program.h"

namespace spyre {

// Throws spyre::Error naming the parameter, the value, its type and the range
// when `value` is not a value of `param`'s dtype.
void check_scalar_param_value(const ScalarParam &param, double value);

// The value of `text` for `param`: the whole text must be one number of the
// parameter's type (for integers a decimal whole number, no fraction, no
// exponent). Throws spyre::Error saying what is wrong otherwise.
double parse_scalar_param(const ScalarParam &param, const std::string &text);

// "k is an i32: a whole number in [-2147483648, 2147483647]", for messages.
std::string describe_scalar_param(const ScalarParam &param);

}  // namespace spyre
