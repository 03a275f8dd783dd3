// Every generator rejects shape parameters that are not positive with a
// message naming them (a zero extent used to divide by zero in a planner).
#include <gtest/gtest.h>

#include "jit_helpers.h"

namespace spyre::testing {
namespace {

struct BadParam {
    const char *generator, *param;
};

class GeneratorParams : public ::testing::TestWithParam<BadParam> {};

TEST_P(GeneratorParams, ZeroExtentIsACompileErrorNamingIt) {
    const BadParam b = GetParam();
    set_compiling_for_spyre(true);
    std::string msg;
    try {
        auto gen = Halide::Internal::GeneratorRegistry::create(b.generator, Halide::GeneratorContext(Halide::Target("x86-64-linux")));
        Halide::Internal::GeneratorParamsMap pm;
        pm[b.param] = "0";
        gen->set_generator_param_values(pm);
        GeneratorSteps::configure(gen.get());
    } catch (const Halide::CompileError &e) {
        msg = e.what();
    }
    set_compiling_for_spyre(false);
    EXPECT_NE(msg.find("must be positive"), std::string::npos) << b.generator << " " << b.param << ": " << msg;
    EXPECT_NE(msg.find(std::string(b.param) + "=0"), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(Generators, GeneratorParams,
                         ::testing::Values(BadParam{"bmm", "m"}, BadParam{"softmax", "cols"}, BadParam{"layernorm", "rows"},
                                           BadParam{"rmsnorm", "cols"}, BadParam{"matmul", "k"},
                                           BadParam{"transpose", "x"}, BadParam{"attention", "s"}),
                         [](const auto &info) { return std::string(info.param.generator) + "_" + info.param.param; });

}  // namespace
}  // namespace spyre::testing
