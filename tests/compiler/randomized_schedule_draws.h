// Shared parts of the randomized-schedule property tests
// (randomized_schedule_test.cpp, randomized_schedule_rowwise_test.cpp): the
// seeded draws (per family and shape, replayable), the legality filter that
// redraws what a planner refuses, and the counts checked at the end.
// SPYRE_RANDOM_SCHEDULE_SEED, SPYRE_RANDOM_SCHEDULE_SHAPES and
// SPYRE_RANDOM_SCHEDULE_ONLY are read here (randomized_schedule_test.cpp's
// header says what they do).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "jit_helpers.h"

namespace spyre::testing {
namespace randomized {

using Params = std::map<std::string, std::string>;


inline uint64_t env_u64(const char *name, uint64_t fallback) {
    const char *s = std::getenv(name);
    return s && *s ? std::strtoull(s, nullptr, 0) : fallback;
}

inline const uint64_t kSeed = env_u64("SPYRE_RANDOM_SCHEDULE_SEED", 20261130);
inline const int kSchedulesPerShape = 3;

inline int shapes_per_family(int fallback) { return (int)env_u64("SPYRE_RANDOM_SCHEDULE_SHAPES", fallback); }

// The shapes this run draws: all, or the one SPYRE_RANDOM_SCHEDULE_ONLY names.
inline std::vector<int> shape_indices(int count) {
    if (const char *only = std::getenv("SPYRE_RANDOM_SCHEDULE_ONLY"); only && *only) return {std::atoi(only)};
    std::vector<int> v;
    for (int i = 0; i < count; i++) v.push_back(i);
    return v;
}

// A generator per (family, shape): every shape replays alone from its index.
inline std::mt19937_64 rng_for(const std::string &family, int shape_index) {
    std::seed_seq seq{(uint32_t)kSeed, (uint32_t)(kSeed >> 32), (uint32_t)std::hash<std::string>{}(family),
                      (uint32_t)shape_index};
    return std::mt19937_64(seq);
}

inline int uniform(std::mt19937_64 &rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
inline bool coin(std::mt19937_64 &rng) { return uniform(rng, 0, 1) == 1; }
template <typename T>
const T &pick(std::mt19937_64 &rng, const std::vector<T> &v) { return v[uniform(rng, 0, (int)v.size() - 1)]; }

// Core limits: small counts (1 to 4), odd ones and the whole machine.
inline int draw_max_cores(std::mt19937_64 &rng) { return pick(rng, std::vector<int>{1, 2, 3, 4, 5, 7, 8, 12, 16, 31, 32}); }

inline std::string describe(const Params &p) {
    std::string s;
    for (const auto &kv : p) s += (s.empty() ? "" : " ") + kv.first + "=" + kv.second;
    return s;
}

inline std::string replay_hint(const std::string &family, const std::string &test, int shape_index, const Params &params) {
    std::ostringstream os;
    os << "replay: SPYRE_RANDOM_SCHEDULE_SEED=" << kSeed << " SPYRE_RANDOM_SCHEDULE_ONLY=" << shape_index
       << " bin/spyre_compiler_tests --gtest_filter=RandomizedSchedules." << test << "\n  gen_" << family << " "
       << describe(params);
    return os.str();
}

// Counts kept across a family's draws, checked at the end: the test must have
// exercised schedules, not rejected them all.
struct DrawCounts {
    int accepted = 0, rejected = 0;
};

inline Halide::Type dtype_of(const std::string &name) { return name == "float16" ? Halide::Float(16) : Halide::Float(32); }

inline void scale(Halide::Buffer<> &b, float k, float offset = 0.0f) {
    if (b.type() == Halide::Float(32)) b.as<float>().for_each_value([&](float &v) { v = v * k + offset; });
    else b.as<Halide::float16_t>().for_each_value([&](Halide::float16_t &v) { v = Halide::float16_t((float)v * k + offset); });
}

// Draws up to `kSchedulesPerShape` schedules for one shape: `draw` returns the
// knobs, `plan_ok` runs the planner on them (false: rejected, redraw).
inline std::vector<Params> draw_schedules(std::mt19937_64 &rng, const std::function<Params(std::mt19937_64 &)> &draw,
                                   const std::function<bool(const Params &)> &plan_ok, DrawCounts &counts) {
    std::vector<Params> out;
    for (int attempt = 0; attempt < 8 * kSchedulesPerShape && (int)out.size() < kSchedulesPerShape; attempt++) {
        Params knobs = draw(rng);
        set_compiling_for_spyre(true);
        bool ok = false;
        try {
            ok = plan_ok(knobs);
        } catch (const std::exception &) {
            ok = false;  // the planner refused the knobs: not a legal schedule
        }
        set_compiling_for_spyre(false);
        if (ok) {
            out.push_back(knobs);
            counts.accepted++;
        } else {
            counts.rejected++;
        }
    }
    return out;
}

inline Params merged(Params a, const Params &b) {
    for (const auto &kv : b) a[kv.first] = kv.second;
    return a;
}

inline void expect_mostly_accepted(const DrawCounts &c, const char *family) {
    std::printf("randomized schedules, %s: %d schedules compiled and checked, %d draws rejected by the planner (seed %llu)\n",
                family, c.accepted, c.rejected, (unsigned long long)kSeed);
    EXPECT_GT(c.accepted, 0);
    EXPECT_GE(c.accepted, 2 * c.rejected) << "most draws should be legal schedules; the draw ranges are off";
}

}  // namespace randomized
}  // namespace spyre::testing
