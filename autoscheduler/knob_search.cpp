// The knob search of the Spyre autoscheduler (see knob_search.h).
#include "knob_search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <set>
#include <thread>

namespace spyre::autoscheduler {
namespace {

using Clock = std::chrono::steady_clock;

std::string key_of(const KnobValues &v) {
    std::string k;
    for (const auto &kv : v) k += kv.first + "=" + kv.second + ";";
    return k;
}

class Search {
public:
    Search(const std::vector<ScheduleKnob> &knobs, const EvaluateFn &evaluate, const SearchOptions &options)
        : knobs_(knobs), evaluate_(evaluate), options_(options), start_time_(Clock::now()), rng_(options.seed) {}

    SearchResult run() {
        result_.space_size = 1;
        for (const ScheduleKnob &k : knobs_) {
            result_.space_size = std::min<int64_t>(result_.space_size * std::max<size_t>(1, k.values.size()),
                                                   std::numeric_limits<int32_t>::max());
        }
        KnobValues start;
        for (const ScheduleKnob &k : knobs_) {
            if (!k.values.empty()) start[k.name] = k.values.front();
        }
        measure({start}, /*ignore_budget=*/true);  // always: the result is never worse than the start
        result_.start = result_.evaluated.empty() ? CandidateResult{start, {}, "not measured", 0} : result_.evaluated.front();
        if (result_.space_size <= options_.exhaustive_limit) {
            measure(every_assignment());
            result_.exhaustive = !result_.budget_exhausted;
        } else {
            coordinate_descent();
            // Then random assignments while time is left; an improvement restarts the descent from it.
            while (!out_of_time() && (int64_t)seen_.size() < result_.space_size &&
                   (int64_t)result_.evaluated.size() < options_.max_evaluations) {
                const double before = result_.best.simulated_us;
                random_assignments();
                if (result_.best.simulated_us < before) coordinate_descent();
            }
        }
        if ((int64_t)result_.evaluated.size() >= result_.space_size) result_.exhaustive = true;
        if (!result_.exhaustive && out_of_time()) result_.budget_exhausted = true;
        result_.seconds = elapsed();
        return result_;
    }

private:
    double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_time_).count(); }
    // Started evaluations count: `started_` is taken before each evaluate_ call.
    bool at_evaluation_limit() { return started_++ >= options_.max_evaluations; }
    bool out_of_time() const { return elapsed() >= options_.budget_seconds; }

    // Measures the assignments not measured yet, `workers` at a time; stops
    // handing out work when the budget is spent.
    void measure(const std::vector<KnobValues> &batch, bool ignore_budget = false) {
        std::vector<KnobValues> todo;
        for (const KnobValues &v : batch) {
            if (seen_.insert(key_of(v)).second) todo.push_back(v);
        }
        std::atomic<size_t> next{0};
        std::mutex mutex;
        auto worker = [&] {
            for (;;) {
                if (!ignore_budget && out_of_time()) {
                    std::lock_guard<std::mutex> lock(mutex);
                    if (next < todo.size()) result_.budget_exhausted = true;
                    return;
                }
                const size_t i = next++;
                if (i >= todo.size()) return;
                if (!ignore_budget && at_evaluation_limit()) {
                    std::lock_guard<std::mutex> lock(mutex);
                    result_.budget_exhausted = true;
                    return;
                }
                CandidateResult r;
                try {
                    r = evaluate_(todo[i]);
                } catch (const std::exception &e) {  // a failed measurement, not a failed search
                    r.error = std::string("evaluation failed: ") + e.what();
                    r.simulated_us = std::numeric_limits<double>::infinity();
                }
                r.knobs = todo[i];
                std::lock_guard<std::mutex> lock(mutex);
                record(r);
            }
        };
        const int n = std::max(1, std::min<int>(options_.workers, (int)todo.size()));
        std::vector<std::thread> threads;
        for (int t = 1; t < n; t++) threads.emplace_back(worker);
        worker();
        for (std::thread &t : threads) t.join();
    }

    void record(const CandidateResult &r) {
        result_.evaluated.push_back(r);
        if (r.ok() && (!result_.best.ok() || r.simulated_us < result_.best.simulated_us)) result_.best = r;
        if (!result_.best.ok() && result_.best.knobs.empty()) result_.best = r;  // first result, even a failure
        if (options_.on_result) options_.on_result(r, result_.best, (int)result_.evaluated.size());
    }

    std::vector<KnobValues> every_assignment() const {
        std::vector<KnobValues> all(1);
        for (const ScheduleKnob &k : knobs_) {
            std::vector<KnobValues> next;
            for (const KnobValues &partial : all) {
                for (const std::string &v : k.values) {
                    KnobValues a = partial;
                    a[k.name] = v;
                    next.push_back(a);
                }
            }
            all.swap(next);
        }
        return all;
    }

    void coordinate_descent() {
        for (int pass = 0; pass < 8 && !out_of_time(); pass++) {
            const double before = result_.best.simulated_us;
            for (const ScheduleKnob &k : knobs_) {
                if (out_of_time()) return;
                std::vector<KnobValues> batch;
                for (const std::string &v : k.values) {
                    KnobValues a = result_.best.knobs;
                    a[k.name] = v;
                    batch.push_back(a);
                }
                measure(batch);
            }
            if (!(result_.best.simulated_us < before)) return;  // a pass without improvement: a local optimum
        }
    }

    void random_assignments() {
        std::vector<KnobValues> batch;
        for (int i = 0; i < options_.random_samples; i++) {
            KnobValues a;
            for (const ScheduleKnob &k : knobs_) {
                if (k.values.empty()) continue;
                a[k.name] = k.values[std::uniform_int_distribution<size_t>(0, k.values.size() - 1)(rng_)];
            }
            batch.push_back(a);
        }
        measure(batch);
    }

    const std::vector<ScheduleKnob> &knobs_;
    const EvaluateFn &evaluate_;
    const SearchOptions &options_;
    const Clock::time_point start_time_;
    std::mt19937_64 rng_;
    std::set<std::string> seen_;
    std::atomic<int64_t> started_{0};
    SearchResult result_;
};

}  // namespace

SearchResult search_knobs(const std::vector<ScheduleKnob> &knobs, const EvaluateFn &evaluate, const SearchOptions &options) {
    return Search(knobs, evaluate, options).run();
}

}  // namespace spyre::autoscheduler
