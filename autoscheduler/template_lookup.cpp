// Finding a pipeline's schedule template (see template_lookup.h).
#include "template_lookup.h"

namespace spyre::autoscheduler {

const ScheduleTemplate &template_for(const Halide::Pipeline &pipeline, const std::string &who) {
    const std::vector<Halide::Func> outputs = pipeline.outputs();
    const std::string output = outputs.empty() ? std::string() : outputs.front().name();
    const ScheduleTemplate *tpl = find_schedule_template(output);
    if (outputs.size() != 1 || !tpl) {
        std::string known;
        for (const std::string &n : schedule_template_outputs()) known += (known.empty() ? "" : ", ") + n;
        throw Halide::CompileError(
            who + ": the pipeline with output '" + output +
            "' has no schedule template. The Spyre autoschedulers schedule the suite's generators built with "
            "target=spyre and auto_schedule=true, which register one (schedules/schedule_template.h)" +
            (known.empty() ? std::string() : "; templates registered in this process: " + known) +
            ". Any other pipeline needs a hand schedule (docs/scheduling.md).");
    }
    return *tpl;
}

}  // namespace spyre::autoscheduler
