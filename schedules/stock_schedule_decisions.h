// What a stock Halide autoscheduler decided for a pipeline, reduced to the
// decisions the Spyre legalization keeps (docs/autoscheduling.md): per Func,
// where it is computed (fusion) and, per stage, the tile size of each split
// loop, the parallel loops and the vector width. Plain data: read off the
// Halide schedule by autoscheduler/stock_legalization.cpp, consumed by each
// schedule template's `legalize` (schedules/schedule_template.h).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace spyre {

struct StockStageDecision {
    // var -> the inner extent of its first split (the tile along var); only
    // splits with a constant factor; vars that are not split are absent.
    std::map<std::string, int> tiles;
    std::vector<std::string> parallel;  // loops marked parallel
    int vector_width = 0;               // lanes of the vectorized loop (0: none)
};

struct StockFuncDecision {
    std::string name;
    // "inline", "root", or "<func>.<var>": the loop of another Func it is computed at.
    std::string compute_at = "inline";
    std::vector<StockStageDecision> stages;  // the pure definition, then the updates
};

struct StockScheduleDecisions {
    std::string autoscheduler;  // e.g. Mullapudi2016
    std::map<std::string, StockFuncDecision> funcs;  // by Func name (Halide's unique names)

    // The decision for the Func whose name is `prefix` or `prefix$<n>` (Halide
    // uniquifies names per process); nullptr if there is none.
    const StockFuncDecision *find(const std::string &prefix) const {
        for (const auto &kv : funcs) {
            if (kv.first == prefix || kv.first.rfind(prefix + "$", 0) == 0) return &kv.second;
        }
        return nullptr;
    }
    // The tile of `var` in stage `stage` of Func `prefix` (0 if it is not split there).
    int tile(const std::string &prefix, int stage, const std::string &var) const {
        const StockFuncDecision *f = find(prefix);
        if (!f || stage >= (int)f->stages.size()) return 0;
        auto it = f->stages[stage].tiles.find(var);
        return it == f->stages[stage].tiles.end() ? 0 : it->second;
    }
};

}  // namespace spyre
