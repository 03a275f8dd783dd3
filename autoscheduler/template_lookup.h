// The schedule template of the pipeline an autoscheduler is given
// (schedules/schedule_template.h), shared by the Spyre autoscheduler and the
// legalization of the stock ones.
//
// Assumes it runs inside a generator driver of this project; the registry is
// libspyre_schedule_templates.so, shared by the generator and this plugin.
#pragma once

#include <string>

#include "Halide.h"
#include "schedule_template.h"

namespace spyre::autoscheduler {

// The template registered for the pipeline's single output. Throws
// Halide::CompileError, prefixed with `who`, naming the output and the
// templates this process has, when there is none.
const ScheduleTemplate &template_for(const Halide::Pipeline &pipeline, const std::string &who);

}  // namespace spyre::autoscheduler
