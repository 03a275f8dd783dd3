// Scalar run-time parameters (scalar_params.h): strict parsing of a value for
// its type, and the simulator refusing a value its type cannot hold instead of
// converting it (an out-of-range double-to-int conversion is undefined
// behaviour: 4294967296 used to arrive as 0, 2.7 as 2).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "program_builder.h"
#include "spyre/error.h"
#include "spyre/scalar_params.h"
#include "spyre/simulator.h"

namespace spyre::testing {
namespace {

const ScalarParam k{"k", DType::I32};
const ScalarParam small{"small", DType::I8};
const ScalarParam scale{"scale", DType::F32};
const ScalarParam half{"half", DType::F16};

template <typename Fn>
std::string error_of(Fn fn) {
    try {
        fn();
    } catch (const Error &e) {
        return e.what();
    }
    return "";
}

std::string parse_error(const ScalarParam &p, const std::string &text) {
    return error_of([&] { parse_scalar_param(p, text); });
}

TEST(ScalarParams, IntegersParseOnlyWholeDecimalNumbersInTheirRange) {
    EXPECT_EQ(parse_scalar_param(k, "42"), 42);
    EXPECT_EQ(parse_scalar_param(k, "-2147483648"), -2147483648.0);
    EXPECT_EQ(parse_scalar_param(k, "+2147483647"), 2147483647.0);
    EXPECT_EQ(parse_scalar_param(small, "-128"), -128);
    const std::string range = "; k is an i32: a whole number in [-2147483648, 2147483647]";
    EXPECT_EQ(parse_error(k, "4294967296"), "'4294967296' is out of range" + range);
    EXPECT_EQ(parse_error(k, "2147483648"), "'2147483648' is out of range" + range);
    EXPECT_EQ(parse_error(k, "99999999999999999999999"), "'99999999999999999999999' is out of range" + range);
    EXPECT_EQ(parse_error(k, "2.7"), "'2.7' is not a whole number in decimal digits (an optional sign, then digits)" + range);
    EXPECT_EQ(parse_error(k, "1e3"), "'1e3' is not a whole number in decimal digits (an optional sign, then digits)" + range);
    EXPECT_EQ(parse_error(k, "abc"), "'abc' is not a whole number in decimal digits (an optional sign, then digits)" + range);
    EXPECT_EQ(parse_error(k, "12x"), "'12x' has characters after the number: 'x'" + range);
    EXPECT_EQ(parse_error(k, ""), "'' is empty" + range);
    EXPECT_EQ(parse_error(k, " 3"), "' 3' starts with a space" + range);
    EXPECT_EQ(parse_error(small, "128"), "'128' is out of range; small is an i8: a whole number in [-128, 127]");
}

TEST(ScalarParams, FloatsParseAnyNumberTheirTypeHolds) {
    EXPECT_EQ(parse_scalar_param(scale, "0.125"), 0.125);
    EXPECT_EQ(parse_scalar_param(scale, "-1e-3"), -1e-3);
    EXPECT_TRUE(std::isinf(parse_scalar_param(scale, "-inf")));
    EXPECT_TRUE(std::isnan(parse_scalar_param(scale, "nan")));
    EXPECT_EQ(parse_scalar_param(half, "65504"), 65504);
    EXPECT_NE(parse_error(scale, "fast").find("'fast' is not a number; scale is an f32"), std::string::npos);
    EXPECT_NE(parse_error(scale, "1.5s").find("'1.5s' has characters after the number: 's'"), std::string::npos);
    EXPECT_NE(parse_error(scale, "1e39").find("'1e39' is too large; scale is an f32"), std::string::npos);
    EXPECT_NE(parse_error(scale, "1e400").find("'1e400' is too large"), std::string::npos);
    EXPECT_NE(parse_error(half, "70000").find("'70000' is too large; half is an f16"), std::string::npos);
}

// Out = A + k on the SFU, k an i32 parameter.
ProgramBuilder add_k_program() {
    ProgramBuilder b("add_k");
    b.p.params.push_back(k);
    const int A = b.arg("A", ArgKind::Input, DType::I32, {32});
    const int Out = b.arg("Out", ArgKind::Output, DType::I32, {32});
    b.load(0, A, 0, 0, 128, 1);
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Sfu, 0);
    b.emit(0, Unit::Sfu, Opcode::Add, {128, 128, 0, 128, 0, 0, 0, 3, 32, 1, (int)DType::I32, 0});
    b.signal(0, Unit::Sfu, 1);
    b.wait(0, Unit::Dma, 1);
    b.store(0, Out, 0, 128, 128, 1);
    return b;
}

TEST(ScalarParams, TheSimulatorRefusesAnIntegerParameterItsTypeCannotHold) {
    const ProgramBuilder b = add_k_program();
    const HostTensor a = random_tensor("A", DType::I32, {32}, 5);
    const HostRunResult ok = run(b, {a}, {7});
    for (int i = 0; i < 32; i++) EXPECT_EQ(element<int32_t>(ok.outputs[0], i), element<int32_t>(a, i) + 7);
    const std::string range = "; k is an i32: a whole number in [-2147483648, 2147483647]";
    EXPECT_EQ(error_of([&] { run(b, {a}, {4294967296.0}); }), "parameter k = 4294967296 is out of range" + range);
    EXPECT_EQ(error_of([&] { run(b, {a}, {2.7}); }), "parameter k = 2.7 is not a whole number" + range);
    EXPECT_EQ(error_of([&] { run(b, {a}, {NAN}); }), "parameter k = nan is not a whole number" + range);
}

}  // namespace
}  // namespace spyre::testing
