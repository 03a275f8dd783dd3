// The Spyre legalization layer for Halide's stock autoschedulers.
//
// run_stock_autoscheduler() runs a stock autoscheduler (Mullapudi2016,
// Adams2019, Li2018: its plugin must be loaded too) on the pipeline, reads
// the decisions it made (fusion: where each Func is computed; tiling: the
// tile of each split loop; parallel loops; vector widths) into
// StockScheduleDecisions, then restores every Func's schedule to what it was
// before, so the pipeline can be scheduled again. The caller (the
// "Legalized_<Name>" autoschedulers of spyre_autoscheduler.cpp) projects the
// decisions onto the family's schedule template and applies that.
//
// Expects: the stock autoscheduler adds no Funcs. Definitions it rewrites
// (Mullapudi2016 and Li2018 inline trivial Funcs into their callers) are
// restored along with the schedules; one that adds Funcs (e.g. rfactor) is
// refused with a Halide::CompileError naming them.
#pragma once

#include <string>

#include "Halide.h"
#include "stock_schedule_decisions.h"

namespace spyre::autoscheduler {

StockScheduleDecisions run_stock_autoscheduler(const Halide::Pipeline &pipeline, const std::string &name,
                                               const Halide::Target &target, const Halide::MachineParams &params,
                                               std::string *schedule_source);

// One line per Func: "<name>: computed at <level>; stage 0 tiles x=64 y=8, parallel y, vector 8; ...".
std::string describe_decisions(const StockScheduleDecisions &d);

}  // namespace spyre::autoscheduler
