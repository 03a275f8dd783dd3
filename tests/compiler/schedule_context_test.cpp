// Schedule contexts (target/driver/schedule_context.h): two pipelines scheduled into two contexts, for
// two machine descriptions, built and compiled in one process interleaved, give byte for byte
// the programs of two separate generator runs; what one context records never reaches another.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "jit_helpers.h"
#include "schedule_context.h"
#include "spyre_schedule.h"

namespace spyre::testing {
namespace {

namespace fs = std::filesystem;

std::string read_bytes(const fs::path &p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

struct Build {
    std::string generator;
    std::map<std::string, std::string> params;
    std::string machine_overrides;  // SPYRE_MACHINE_SET form, "" for the default machine
};

MachineDescription machine_of(const Build &b) {
    MachineDescription m = default_machine();
    if (!b.machine_overrides.empty()) apply_machine_overrides(m, b.machine_overrides, "SPYRE_MACHINE_SET");  // the source a separate run records
    return m;
}

// Generates and schedules `b` in a context of its own; the program goes to dir/<kernel>.spyre when compiled.
Halide::Pipeline build_in_context(const Build &b, const std::string &kernel, const fs::path &dir) {
    ScheduleContext::Use use(ScheduleContext::make(true, machine_of(b)));
    DriverOptions d;
    d.function_name = kernel;
    d.output_dir = dir.string();
    set_driver_options(d);
    auto gen = Halide::Internal::GeneratorRegistry::create(b.generator, Halide::GeneratorContext(Halide::Target("x86-64-linux")));
    Halide::Internal::GeneratorParamsMap pm;
    for (const auto &kv : b.params) pm[kv.first] = kv.second;
    gen->set_generator_param_values(pm);
    GeneratorSteps::configure(gen.get());
    return GeneratorSteps::build(gen.get());
}

// The program of `b` from a generator run of its own (a separate process, the machine from the environment).
std::string separate_run_program(const Build &b, const std::string &kernel, const fs::path &dir) {
    std::string cmd;
    if (!b.machine_overrides.empty()) cmd += "SPYRE_MACHINE_SET=" + b.machine_overrides + " ";
    cmd += std::string(SPYRE_GENERATOR_DIR) + "/gen_" + b.generator + " -g " + b.generator + " -f " + kernel + " -o " +
           dir.string() + " -e static_library -target=spyre";
    for (const auto &kv : b.params) cmd += " " + kv.first + "=" + kv.second;
    cmd += " > " + (dir / (kernel + ".log")).string() + " 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << read_bytes(dir / (kernel + ".log"));
    return read_bytes(dir / (kernel + ".spyre"));
}

fs::path fresh_dir(const std::string &name) {
    const fs::path dir = fs::temp_directory_path() / ("spyre_schedule_context_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

TEST(ScheduleContext, TwoPipelinesForTwoMachinesInterleavedMatchSeparateRuns) {
    const Build a{"elementwise", {{"d0", "256"}, {"d1", "64"}, {"d2", "1"}, {"dtype", "float32"}, {"op", "add"}}, ""};
    const Build b{"softmax", {{"cols", "256"}, {"rows", "64"}}, "cores=8,scratchpad_bytes=1048576"};
    const Build a_on_b{a.generator, a.params, b.machine_overrides};
    const fs::path in_process = fresh_dir("in_process"), separate = fresh_dir("separate");

    // Interleaved: both scheduled before either compiles, compiled in the other order, a third
    // (a's generator on b's machine) scheduled in between.
    Halide::Pipeline pa = build_in_context(a, "ctx_a", in_process);
    Halide::Pipeline pb = build_in_context(b, "ctx_b", in_process);
    Halide::Pipeline pab = build_in_context(a_on_b, "ctx_ab", in_process);
    const Halide::Target target("x86-64-linux");
    pb.compile_jit(target);
    pa.compile_jit(target);
    pab.compile_jit(target);

    const std::string program_a = read_bytes(in_process / "ctx_a.spyre");
    const std::string program_b = read_bytes(in_process / "ctx_b.spyre");
    const std::string program_ab = read_bytes(in_process / "ctx_ab.spyre");
    ASSERT_FALSE(program_a.empty());
    ASSERT_FALSE(program_b.empty());
    EXPECT_TRUE(program_a == separate_run_program(a, "ctx_a", separate)) << "elementwise on the default machine";
    EXPECT_TRUE(program_b == separate_run_program(b, "ctx_b", separate)) << "softmax on 8 cores";
    EXPECT_TRUE(program_ab == separate_run_program(a_on_b, "ctx_ab", separate)) << "elementwise on 8 cores";
    // The machine reached the program: the same kernel for 8 cores is another one.
    EXPECT_NE(program_a, program_ab);
    if (HasFailure()) {
        std::cout << "kept for inspection: " << in_process << " and " << separate << "\n";
    } else {
        fs::remove_all(in_process);
        fs::remove_all(separate);
    }
}

// A context's deadline stops the Spyre lowering at a pass boundary (the autoscheduler's candidates).
TEST(ScheduleContext, ACompilePastItsContextsDeadlineStopsWithAnError) {
    auto compile_error = [](std::chrono::steady_clock::time_point deadline) {
        auto context = ScheduleContext::make(true);
        context->set_deadline(deadline);
        Halide::Pipeline p;
        {
            ScheduleContext::Use use(context);
            auto gen = Halide::Internal::GeneratorRegistry::create("elementwise",
                                                                   Halide::GeneratorContext(Halide::Target("x86-64-linux")));
            gen->set_generator_param_values({{"d0", "64"}, {"d1", "32"}, {"d2", "1"}, {"dtype", "float32"}});
            GeneratorSteps::configure(gen.get());
            p = GeneratorSteps::build(gen.get());
        }
        try {
            p.compile_jit(Halide::Target("x86-64-linux"));
        } catch (const Halide::CompileError &e) {
            return std::string(e.what());
        }
        return std::string();
    };
    const std::string past = compile_error(std::chrono::steady_clock::now() - std::chrono::seconds(1));
    EXPECT_NE(past.find("was stopped at its deadline"), std::string::npos) << past;
    // Without a deadline the same kernel compiles.
    EXPECT_EQ(compile_error(std::chrono::steady_clock::time_point::max()), "");
}

TEST(ScheduleContext, WhatOneContextRecordsNeverReachesAnother) {
    auto first = ScheduleContext::make(true), second = ScheduleContext::make(true);
    {
        ScheduleContext::Use use(first);
        Halide::ImageParam in(Halide::Float(32), 2, "ctx_isolated_in");
        constrain_tensor(in, {100, 3});
        Halide::Func f("ctx_isolated_f");
        Halide::Var x("x"), y("y");
        f(x, y) = in(x, y);
        f.compute_root().store_in(Halide::MemoryType::VTCM);
        double_buffer_result(f);
        EXPECT_TRUE(is_spyre());
    }
    ASSERT_TRUE(first->tensor("ctx_isolated_in").has_value());
    EXPECT_EQ(first->tensor("ctx_isolated_in")->padded, (std::vector<int>{128, 3}));
    EXPECT_EQ(first->double_buffered().count("ctx_isolated_f"), 1u);
    EXPECT_FALSE(second->tensor("ctx_isolated_in").has_value());
    EXPECT_TRUE(second->double_buffered().empty());
    // The thread's own context is active again, and it saw none of it.
    EXPECT_FALSE(ScheduleContext::active().tensor("ctx_isolated_in").has_value());
}

TEST(ScheduleContext, ContextsOnTwoThreadsAreIndependent) {
    auto spyre_ctx = ScheduleContext::make(true), host_ctx = ScheduleContext::make(false);
    bool seen_on_spyre = false, seen_on_host = true;
    std::thread t1([&] {
        ScheduleContext::Use use(spyre_ctx);
        for (int i = 0; i < 1000; i++) seen_on_spyre = is_spyre();
    });
    std::thread t2([&] {
        ScheduleContext::Use use(host_ctx);
        for (int i = 0; i < 1000; i++) seen_on_host = is_spyre();
    });
    t1.join();
    t2.join();
    EXPECT_TRUE(seen_on_spyre);
    EXPECT_FALSE(seen_on_host);
}

}  // namespace
}  // namespace spyre::testing
