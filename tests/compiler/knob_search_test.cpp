// The Spyre autoscheduler's knob search (autoscheduler/knob_search.h) on
// synthetic cost functions whose optimum is known: exhaustive search of small
// spaces, coordinate descent of large ones, the time budget, failed
// candidates; and the timing-only measurement of a real program file.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "candidate_evaluation.h"
#include "knob_search.h"
#include "spyre/assembler.h"
#include "spyre/error.h"
#include "spyre/machine.h"
#include "spyre/program_format.h"

namespace spyre::autoscheduler {
namespace {

std::vector<ScheduleKnob> grid(int knobs, int values) {
    std::vector<ScheduleKnob> g;
    for (int k = 0; k < knobs; k++) {
        ScheduleKnob knob{"k" + std::to_string(k), {}};
        for (int v = 0; v < values; v++) knob.values.push_back(std::to_string(v));
        g.push_back(knob);
    }
    return g;
}

// A separable bowl with its minimum at k_i = target_i; the start (all 0) is far from it.
double bowl(const KnobValues &v, const std::vector<int> &target) {
    double c = 100;
    for (size_t i = 0; i < target.size(); i++) {
        const int x = std::stoi(v.at("k" + std::to_string(i)));
        c += (x - target[i]) * (x - target[i]);
    }
    return c;
}

TEST(KnobSearch, SmallSpacesAreMeasuredCompletelyAndTheOptimumFound) {
    const auto knobs = grid(3, 4);  // 64 assignments
    const std::vector<int> target = {3, 1, 2};
    std::atomic<int> calls{0};
    SearchOptions o;
    o.workers = 2;
    const SearchResult r = search_knobs(
        knobs, [&](const KnobValues &v) { calls++; return CandidateResult{v, bowl(v, target), "", 0}; }, o);
    EXPECT_EQ(r.space_size, 64);
    EXPECT_TRUE(r.exhaustive);
    EXPECT_EQ(calls.load(), 64) << "each assignment measured exactly once";
    EXPECT_EQ(r.evaluated.size(), 64u);
    EXPECT_EQ(r.best.simulated_us, 100);
    EXPECT_EQ(r.best.knobs, (KnobValues{{"k0", "3"}, {"k1", "1"}, {"k2", "2"}}));
    EXPECT_EQ(r.start.knobs, (KnobValues{{"k0", "0"}, {"k1", "0"}, {"k2", "0"}}));
    EXPECT_EQ(r.evaluated.front().knobs, r.start.knobs) << "the start is measured first";
}

TEST(KnobSearch, LargeSpacesDescendToTheOptimumOfASeparableCost) {
    const auto knobs = grid(6, 8);  // 262144 assignments: too many to measure
    const std::vector<int> target = {7, 0, 5, 2, 6, 3};
    SearchOptions o;
    o.exhaustive_limit = 256;
    o.max_evaluations = 300;
    const SearchResult r =
        search_knobs(knobs, [&](const KnobValues &v) { return CandidateResult{v, bowl(v, target), "", 0}; }, o);
    EXPECT_FALSE(r.exhaustive);
    EXPECT_EQ(r.best.simulated_us, 100) << "coordinate descent reaches the minimum of a separable bowl";
    EXPECT_LE((int64_t)r.evaluated.size(), 300 + 1) << "the limit counts every measurement but the start";
}

TEST(KnobSearch, TheBudgetStopsNewEvaluationsButTheStartIsAlwaysMeasured) {
    const auto knobs = grid(2, 10);
    SearchOptions o;
    o.budget_seconds = 0.15;
    o.workers = 1;
    const auto t0 = std::chrono::steady_clock::now();
    const SearchResult r = search_knobs(
        knobs,
        [&](const KnobValues &v) {
            std::this_thread::sleep_for(std::chrono::milliseconds(40));
            return CandidateResult{v, bowl(v, {9, 9}), "", 0};
        },
        o);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(r.budget_exhausted);
    EXPECT_FALSE(r.exhaustive);
    EXPECT_GE(r.evaluated.size(), 1u);
    EXPECT_LT(r.evaluated.size(), 100u);
    EXPECT_LT(took, 1.0) << "no evaluation starts after the budget";
    EXPECT_TRUE(r.start.ok());

    o.budget_seconds = 0;  // even a zero budget measures the start
    const SearchResult z =
        search_knobs(knobs, [&](const KnobValues &v) { return CandidateResult{v, 5, "", 0}; }, o);
    EXPECT_EQ(z.evaluated.size(), 1u);
    EXPECT_TRUE(z.best.ok());
}

TEST(KnobSearch, FailedCandidatesAreRecordedAndNeverChosen) {
    const auto knobs = grid(2, 3);
    const SearchResult r = search_knobs(
        knobs,
        [&](const KnobValues &v) {
            // Cheaper towards k0 = 2, but k0 = 2 never compiles.
            if (v.at("k0") == "2") return CandidateResult{v, 1, "scratchpad footprint over budget", 0};
            return CandidateResult{v, 10.0 - std::stoi(v.at("k0")) - 0.1 * std::stoi(v.at("k1")), "", 0};
        },
        SearchOptions{});
    EXPECT_EQ(r.best.knobs, (KnobValues{{"k0", "1"}, {"k1", "2"}}));
    int failed = 0;
    for (const CandidateResult &c : r.evaluated) failed += c.ok() ? 0 : 1;
    EXPECT_EQ(failed, 3);

    const SearchResult none = search_knobs(
        knobs, [&](const KnobValues &v) { return CandidateResult{v, 1, "does not compile", 0}; }, SearchOptions{});
    EXPECT_FALSE(none.best.ok());
    EXPECT_EQ(none.best.error, "does not compile");
}

TEST(KnobSearch, ProgramFilesAreMeasuredTimingOnly) {
    // examples/vadd32.s: 32 cores, each 4 tiles of load, add, store.
    const std::vector<uint8_t> text = read_file_bytes(std::string(SPYRE_SOURCE_DIR) + "/examples/vadd32.s");
    const Program p = assemble_program(std::string(text.begin(), text.end()), default_machine(), "vadd32.s");
    const std::string path = ::testing::TempDir() + "/knob_search_vadd32.spyre";
    write_file_bytes(path, encode_program(p));
    const double us = simulate_program_file_us(path);
    EXPECT_GT(us, 0.0);
    EXPECT_EQ(simulate_program_file_us(path), us) << "the timing model is deterministic";
    EXPECT_THROW(simulate_program_file_us(::testing::TempDir() + "/does_not_exist.spyre"), spyre::Error);
}

}  // namespace
}  // namespace spyre::autoscheduler
