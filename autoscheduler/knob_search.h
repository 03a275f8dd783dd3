// The search of the Spyre autoscheduler over a schedule template's knobs.
//
// Expects: the knobs' candidate values (values[0] the starting point) and an
// evaluation function that measures one assignment (thread-safe; it is called
// from `workers` threads at once; an exception it throws is recorded as a
// failed candidate). Guarantees: the starting point is measured
// first, so the result is never slower than it; small spaces (at most
// `exhaustive_limit` assignments) are measured completely; larger ones by
// coordinate descent (all values of one knob at a time, the others held at
// the best so far, until a full pass improves nothing), then rounds of random
// assignments while time is left, descending again from any improvement.
// No new evaluation starts after `budget_seconds`.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "schedule_template.h"

namespace spyre::autoscheduler {

struct CandidateResult {
    KnobValues knobs;
    double simulated_us = std::numeric_limits<double>::infinity();  // infinity: did not compile or run
    std::string error;                                               // why, when it failed
    double seconds = 0;                                              // wall time of the evaluation

    bool ok() const { return error.empty() && simulated_us < std::numeric_limits<double>::infinity(); }
};

struct SearchOptions {
    double budget_seconds = 60;
    int workers = 2;
    int64_t exhaustive_limit = 256;  // measure every assignment when there are at most this many
    int random_samples = 16;         // random assignments per round after the descent
    int64_t max_evaluations = 4096;  // start no more than this many measurements, even with time left
    uint64_t seed = 1;
    // Called after each evaluation, from the searching thread, in completion order.
    std::function<void(const CandidateResult &, const CandidateResult &best, int evaluated)> on_result;
};

struct SearchResult {
    CandidateResult start;  // the starting point (the generator's current knobs)
    CandidateResult best;
    std::vector<CandidateResult> evaluated;
    int64_t space_size = 0;
    bool exhaustive = false;        // every assignment was measured
    bool budget_exhausted = false;  // the search stopped for time
    double seconds = 0;
};

using EvaluateFn = std::function<CandidateResult(const KnobValues &)>;

SearchResult search_knobs(const std::vector<ScheduleKnob> &knobs, const EvaluateFn &evaluate, const SearchOptions &options);

}  // namespace spyre::autoscheduler
