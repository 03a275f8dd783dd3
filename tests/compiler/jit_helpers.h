// Test helpers for compiler tests: build a registered generator for Spyre or
// for the host in this process (JIT), run it on Halide buffers, and make
// random, non-constant tensors. The Spyre build runs through the same lowering
// pass, embedded program and runtime call as an AOT build.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "Halide.h"
#include "spyre/spyre_runtime.h"
#include "spyre_lowering.h"
#include "spyre_target.h"
#include "tensor_constraints.h"

namespace spyre::testing {

// `name` must be the generator input's name: inputs bound to buffers keep the buffer's name in the IR.
inline Halide::Buffer<> random_buffer(const std::string &name, Halide::Type t, std::vector<int> extents, uint64_t seed) {
    Halide::Buffer<> b(t, extents, name);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    if (t == Halide::Float(32)) {
        b.as<float>().for_each_value([&](float &v) { v = u(rng); });
    } else if (t == Halide::Int(8)) {
        // The whole int8 range, extremes included.
        std::uniform_int_distribution<int> i8(-128, 127);
        b.as<int8_t>().for_each_value([&](int8_t &v) { v = (int8_t)i8(rng); });
    } else if (t == Halide::Int(32)) {
        std::uniform_int_distribution<int32_t> i32(-(1 << 20), 1 << 20);
        b.as<int32_t>().for_each_value([&](int32_t &v) { v = i32(rng); });
    } else {
        b.as<Halide::float16_t>().for_each_value([&](Halide::float16_t &v) { v = Halide::float16_t(u(rng)); });
    }
    return b;
}

// The same values in a buffer whose allocation has the padded extents (zeros in
// the padding) but whose extents are the true ones. Spyre JIT builds need it for
// inputs bound to buffers: Halide embeds such a buffer and indexes it with its
// real strides, which must then be the padded dense strides of the device
// layout. (AOT callers pass any strides; the runtime converts.)
inline Halide::Buffer<> padded_copy(const Halide::Buffer<> &dense, const std::vector<int> &padded) {
    Halide::Buffer<> big(dense.type(), padded, dense.name());
    std::memset(big.data(), 0, big.size_in_bytes());
    Halide::Buffer<> view = big;
    for (int d = 0; d < dense.dimensions(); d++) view.crop(d, 0, dense.dim(d).extent());
    view.copy_from(dense);
    return view;
}

inline double value_at(const Halide::Buffer<> &b, int x, int y, int z) {
    if (b.type() == Halide::Float(32)) return b.as<float>()(x, y, z);
    if (b.type() == Halide::Int(32)) return b.as<int32_t>()(x, y, z);
    if (b.type() == Halide::Int(8)) return b.as<int8_t>()(x, y, z);
    return (double)(float)b.as<Halide::float16_t>()(x, y, z);
}

// Halide 14 keeps a generator's configure/build steps protected (its stubs use
// them); tests reach them through this accessor, the standard pointer-to-member idiom.
struct GeneratorSteps : Halide::Internal::GeneratorBase {
    static void configure(Halide::Internal::GeneratorBase *g) { (g->*(&GeneratorSteps::call_configure))(); }
    static Halide::Pipeline build(Halide::Internal::GeneratorBase *g) { return (g->*(&GeneratorSteps::build_pipeline))(); }
};

// The message of the Halide::CompileError that configuring generator `name` with `params`
// (for an x86-64 host target) throws; empty if configure() accepts them.
inline std::string configure_error(const std::string &name, const Halide::Internal::GeneratorParamsMap &params) {
    try {
        auto gen = Halide::Internal::GeneratorRegistry::create(name, Halide::GeneratorContext(Halide::Target("x86-64-linux")));
        gen->set_generator_param_values(params);
        GeneratorSteps::configure(gen.get());
    } catch (const Halide::CompileError &e) {
        return e.what();
    }
    return "";
}

// Builds generator `name` with `params` for Spyre or the host, in a schedule context of its own
// (for `machine`), and binds the inputs; the pipeline compiles at its first realize_generator call.
template <typename... Inputs>
Halide::Pipeline build_generator_for(const std::string &name, const std::map<std::string, std::string> &params,
                                     bool for_spyre, const MachineDescription &machine, const Inputs &...inputs) {
    ScheduleContext::Use use(ScheduleContext::make(for_spyre, machine));
    DriverOptions d;
    d.function_name = name;
    set_driver_options(d);
    const Halide::Target target = for_spyre ? Halide::Target("x86-64-linux") : host_reference_target();
    auto gen = Halide::Internal::GeneratorRegistry::create(name, Halide::GeneratorContext(target));
    Halide::Internal::GeneratorParamsMap pm;
    for (const auto &kv : params) pm[kv.first] = kv.second;
    gen->set_generator_param_values(pm);
    GeneratorSteps::configure(gen.get());
    gen->set_inputs(inputs...);
    return GeneratorSteps::build(gen.get());
}

template <typename... Inputs>
Halide::Pipeline build_generator(const std::string &name, const std::map<std::string, std::string> &params,
                                 bool for_spyre, const Inputs &...inputs) {
    return build_generator_for(name, params, for_spyre, default_machine(), inputs...);
}

// Realizes a pipeline from build_generator (compiling it on the first call, with the schedule
// context it was built in) into a new buffer of `out_type` and `out_extents`.
inline Halide::Buffer<> realize_generator(Halide::Pipeline &p, bool for_spyre, Halide::Type out_type,
                                          const std::vector<int> &out_extents) {
    const Halide::Target target = for_spyre ? Halide::Target("x86-64-linux") : host_reference_target();
    Halide::Buffer<> out(out_type, out_extents);
    p.realize(Halide::Realization({out}), target);
    return out;
}

// Builds generator `name` with `params` for Spyre (baseline x86-64 target) or the
// host, binds the inputs, and realizes the single output with `out_extents`.
template <typename... Inputs>
Halide::Buffer<> run_generator(const std::string &name, const std::map<std::string, std::string> &params,
                               bool for_spyre, Halide::Type out_type, const std::vector<int> &out_extents,
                               const Inputs &...inputs) {
    Halide::Pipeline p = build_generator(name, params, for_spyre, inputs...);
    return realize_generator(p, for_spyre, out_type, out_extents);
}

// Builds a norm generator (`name`: layernorm or rmsnorm) once, Spyre or host,
// with its eps input bound to a run-time Param, then realizes it once per value
// in `eps_values`.
template <typename... Inputs>
inline std::vector<Halide::Buffer<>> run_with_eps(const std::string &name,
                                                  const std::map<std::string, std::string> &params, bool for_spyre,
                                                  Halide::Type t, const std::vector<int> &out_extents,
                                                  const std::vector<float> &eps_values, const Inputs &...inputs) {
    ScheduleContext::Use use(ScheduleContext::make(for_spyre));
    DriverOptions d;
    d.function_name = name;
    set_driver_options(d);
    const Halide::Target target = for_spyre ? Halide::Target("x86-64-linux") : Halide::get_host_target();
    auto gen = Halide::Internal::GeneratorRegistry::create(name, Halide::GeneratorContext(target));
    Halide::Internal::GeneratorParamsMap pm;
    for (const auto &kv : params) pm[kv.first] = kv.second;
    gen->set_generator_param_values(pm);
    GeneratorSteps::configure(gen.get());
    Halide::Param<float> eps("eps_runtime");
    gen->set_inputs(inputs..., Halide::Expr(eps));
    Halide::Pipeline p = GeneratorSteps::build(gen.get());
    p.compile_jit(target);
    std::vector<Halide::Buffer<>> outs;
    for (float v : eps_values) {
        eps.set(v);
        Halide::Buffer<> out(t, out_extents);
        p.realize(Halide::Realization({out}), target);
        outs.push_back(out);
    }
    return outs;
}

// Bitwise equality of two realizations of the same output.
inline bool identical(const Halide::Buffer<> &a, const Halide::Buffer<> &b) {
    return a.size_in_bytes() == b.size_in_bytes() && std::memcmp(a.data(), b.data(), a.size_in_bytes()) == 0;
}

// Expects two 2-D realizations equal element by element, and the second not constant (equal
// constants could compare equal by accident).
inline void expect_equal_and_varied(const Halide::Buffer<float> &a, const Halide::Buffer<float> &b) {
    ASSERT_EQ(a.width(), b.width());
    ASSERT_EQ(a.height(), b.height());
    int distinct = 0;
    for (int j = 0; j < b.height(); j++)
        for (int i = 0; i < b.width(); i++) {
            ASSERT_EQ(a(i, j), b(i, j)) << i << "," << j;
            if (b(i, j) != b(0, 0)) distinct++;
        }
    EXPECT_GT(distinct, 0) << "constant output: the comparison could pass by accident";
}

inline void set_sync_mode(const char *mode, uint64_t seed) {
    setenv("SPYRE_SYNC", mode, 1);
    setenv("SPYRE_SEED", std::to_string(seed).c_str(), 1);
}

// Runs the compiled Spyre pipeline in the three synchronization modes; checks
// they agree bit for bit and that forced serial is not faster. Returns the
// normal-mode output.
inline Halide::Buffer<> run_in_every_sync_mode(Halide::Pipeline &p, Halide::Type t, const std::vector<int> &extents,
                                        uint64_t seed) {
    set_sync_mode("normal", seed);
    Halide::Buffer<> normal = realize_generator(p, true, t, extents);
    spyre_kernel_stats normal_stats{}, serial_stats{};
    EXPECT_EQ(spyre_get_last_run_stats(&normal_stats), 0);
    set_sync_mode("serial", seed);
    Halide::Buffer<> serial = realize_generator(p, true, t, extents);
    EXPECT_EQ(spyre_get_last_run_stats(&serial_stats), 0);
    set_sync_mode("random", seed);
    Halide::Buffer<> random = realize_generator(p, true, t, extents);
    unsetenv("SPYRE_SYNC");
    unsetenv("SPYRE_SEED");
    EXPECT_TRUE(identical(normal, serial)) << "forced-serial synchronization changed the result";
    EXPECT_TRUE(identical(normal, random)) << "random latencies changed the result";
    EXPECT_GE(serial_stats.cycles, normal_stats.cycles) << "forced serial ran faster than normal synchronization";
    return normal;
}

// max |spyre - host| / max(1, |host|) over all elements, with checks that the
// reference is not constant or zero (so the comparison could not pass by accident).
inline double max_relative_error(const Halide::Buffer<> &host, const Halide::Buffer<> &spyre) {
    double max_err = 0, max_ref = 0;
    bool varies = false;
    const int rank = host.dimensions();
    const int e0 = host.dim(0).extent(), e1 = rank > 1 ? host.dim(1).extent() : 1, e2 = rank > 2 ? host.dim(2).extent() : 1;
    const double first = value_at(host, 0, 0, 0);
    for (int z = 0; z < e2; z++)
        for (int y = 0; y < e1; y++)
            for (int x = 0; x < e0; x++) {
                const double h = value_at(host, x, y, z), s = value_at(spyre, x, y, z);
                max_err = std::max(max_err, std::isfinite(s) ? std::fabs(h - s) / std::max(1.0, std::fabs(h)) : INFINITY);
                max_ref = std::max(max_ref, std::fabs(h));
                varies = varies || h != first;
            }
    if ((int64_t)e0 * e1 * e2 > 1) {
        EXPECT_TRUE(varies) << "the host reference is constant";
    }
    EXPECT_GT(max_ref, 1e-3) << "the host reference is (nearly) zero";
    return max_err;
}

// Realizes `out` (compiled for Spyre, lowering attached) into `r`, and leaves Spyre mode off
// whether or not it throws.
template <typename T>
void realize_for_spyre(Halide::Func out, Halide::Buffer<T> &r) {
    try {
        out.realize(r, Halide::Target("x86-64-linux"));
    } catch (...) {
        set_compiling_for_spyre(false);
        throw;
    }
    set_compiling_for_spyre(false);
}

// The message of the CompileError `f` throws (a failure if it throws none). Leaves Spyre mode off.
template <typename F>
std::string error_of(F f) {
    try {
        f();
    } catch (const Halide::CompileError &e) {
        set_compiling_for_spyre(false);
        return e.what();
    }
    set_compiling_for_spyre(false);
    ADD_FAILURE() << "expected a CompileError";
    return "";
}

// Attaches the Spyre lowering to `out`, JIT-compiles it and returns the compile
// error ("" if it compiled). Leaves Spyre mode off.
inline std::string spyre_compile_error(Halide::Func out, const std::string &kernel_name) {
    SpyreLoweringOptions o;
    o.kernel_name = kernel_name;
    attach_spyre_lowering(out, o);
    std::string msg;
    try {
        out.compile_jit(Halide::Target("x86-64-linux"));
    } catch (const Halide::CompileError &e) {
        msg = e.what();
    }
    set_compiling_for_spyre(false);
    return msg;
}

}  // namespace spyre::testing
