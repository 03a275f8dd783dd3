// Running a stock autoscheduler and reading its decisions (see stock_legalization.h).
#include "stock_legalization.h"

#include <sstream>

namespace spyre::autoscheduler {
namespace {

using namespace Halide;
using namespace Halide::Internal;

std::map<std::string, Function> environment_of(const Pipeline &p) {
    std::map<std::string, Function> env;
    for (const Func &out : p.outputs()) {
        for (const auto &kv : find_transitive_calls(out.function())) env.emplace(kv.first, kv.second);
        env.emplace(out.name(), out.function());
    }
    return env;
}

// A Func as it was: its FuncSchedule and its definitions with their schedules.
// The definitions too, because stock autoschedulers also rewrite them
// (Mullapudi2016 and Li2018 inline trivial Funcs, such as an input's Func, into their callers).
struct SavedSchedule {
    FuncSchedule func;
    std::vector<Definition> definitions;  // the pure definition, then the updates
};

SavedSchedule save(const Function &f) {
    // Wrappers (Func::in()) stay the same Funcs: deep_copy looks them up in `copied`.
    std::map<FunctionPtr, FunctionPtr> copied;
    for (const auto &w : f.schedule().wrappers()) copied[w.second] = w.second;
    SavedSchedule s{f.schedule().deep_copy(copied), {}};
    s.definitions.push_back(f.definition().get_copy());
    for (const Definition &u : f.updates()) s.definitions.push_back(u.get_copy());
    return s;
}

void restore(Function f, const SavedSchedule &s) {
    f.schedule() = s.func;
    f.definition() = s.definitions[0];
    for (size_t i = 0; i + 1 < s.definitions.size(); i++) f.update((int)i) = s.definitions[i + 1];
}

std::string level_of(const Function &f) {
    LoopLevel l = f.schedule().compute_level();
    l.lock();
    if (l.is_inlined()) return "inline";
    if (l.is_root()) return "root";
    return l.func() + "." + l.var().name();
}

StockStageDecision stage_of(const StageSchedule &s) {
    StockStageDecision d;
    std::map<std::string, int> inner_factor;  // inner var of a split -> its factor
    for (const Split &sp : s.splits()) {
        if (!sp.is_split()) continue;
        const int64_t *f = as_const_int(sp.factor);
        if (!f) continue;
        inner_factor[sp.inner] = (int)*f;
        d.tiles.emplace(sp.old_var, (int)*f);  // the first split of a var is its tile
    }
    for (const Dim &dim : s.dims()) {
        if (dim.for_type == ForType::Parallel) d.parallel.push_back(dim.var);
        if (dim.for_type == ForType::Vectorized) {
            auto it = inner_factor.find(dim.var);
            d.vector_width = it == inner_factor.end() ? -1 : it->second;  // -1: a whole dimension, width unknown here
        }
    }
    return d;
}

}  // namespace

StockScheduleDecisions run_stock_autoscheduler(const Pipeline &pipeline, const std::string &name, const Target &target,
                                               const MachineParams &params, std::string *schedule_source) {
    const std::map<std::string, Function> before = environment_of(pipeline);
    std::map<std::string, SavedSchedule> saved;
    for (const auto &kv : before) saved.emplace(kv.first, save(kv.second));

    Pipeline p = pipeline;
    AutoSchedulerResults results = p.auto_schedule(name, target, params);
    if (schedule_source) *schedule_source = results.schedule_source;

    const std::map<std::string, Function> after = environment_of(pipeline);
    std::string added;
    for (const auto &kv : after) {
        if (!before.count(kv.first)) added += (added.empty() ? "" : ", ") + kv.first;
    }
    if (!added.empty()) {
        throw CompileError("Spyre legalization of " + name + ": the autoscheduler rewrote the algorithm (it added " +
                           added + ", e.g. by rfactor), which the Spyre templates cannot express");
    }

    StockScheduleDecisions d;
    d.autoscheduler = name;
    for (const auto &kv : before) {
        const Function &f = kv.second;
        StockFuncDecision fd;
        fd.name = f.name();
        fd.compute_at = level_of(f);
        fd.stages.push_back(stage_of(f.definition().schedule()));
        for (const Definition &u : f.updates()) fd.stages.push_back(stage_of(u.schedule()));
        d.funcs.emplace(fd.name, fd);
    }
    for (const auto &kv : before) restore(kv.second, saved.at(kv.first));
    return d;
}

std::string describe_decisions(const StockScheduleDecisions &d) {
    std::ostringstream os;
    for (const auto &kv : d.funcs) {
        const StockFuncDecision &f = kv.second;
        os << f.name << ": computed " << (f.compute_at == "inline" || f.compute_at == "root" ? "" : "at ") << f.compute_at;
        for (size_t i = 0; i < f.stages.size(); i++) {
            const StockStageDecision &s = f.stages[i];
            if (s.tiles.empty() && s.parallel.empty() && s.vector_width == 0) continue;
            os << "; stage " << i << ":";
            for (const auto &t : s.tiles) os << " " << t.first << "/" << t.second;
            for (const std::string &v : s.parallel) os << " parallel " << v;
            if (s.vector_width > 0) os << " vector " << s.vector_width;
        }
        os << "\n";
    }
    return os.str();
}

}  // namespace spyre::autoscheduler
