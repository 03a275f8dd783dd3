// The Spyre backend's entry point: a Halide custom lowering pass that turns
// the device region of a scheduled, lowered pipeline into a Spyre program,
// embeds it in the host object and replaces the region by a runtime call.
// The passes it runs, in order, are listed in spyre_lowering.cpp.
#pragma once

#include <memory>
#include <string>

#include "Halide.h"
#include "diagnostics.h"  // spyre::CompileError
#include "schedule_context.h"

namespace spyre {

struct SpyreLoweringOptions {
    std::string kernel_name;  // program and report name
    std::string output_dir;   // where <kernel_name>.spyre and .spyre.txt go; empty: not written
    bool user_context = false; // the target has Halide's user_context feature
};

// Options from the generator driver (kernel = -f name, dir = -o).
SpyreLoweringOptions lowering_options_from_driver(const std::string &default_kernel_name);

// Adds the Spyre lowering pass to `p` (call from a generator's schedule() when is_spyre()). The
// pass compiles `p` with `context` (the schedule context the pipeline was scheduled into; by
// default the one active on this thread), whatever context is active when `p` is compiled, and
// reads the context when it runs: a schedule changed after attaching (the Spyre autoscheduler's
// ScheduleTemplate::apply re-plans the padding and the staging) needs no new pass.
void attach_spyre_lowering(Halide::Pipeline p, const SpyreLoweringOptions &options);
void attach_spyre_lowering(Halide::Pipeline p, const SpyreLoweringOptions &options,
                           std::shared_ptr<const ScheduleContext> context);
// The same for a JIT pipeline whose output is `output`.
void attach_spyre_lowering(Halide::Func &output, const SpyreLoweringOptions &options);
void attach_spyre_lowering(Halide::Func &output, const SpyreLoweringOptions &options,
                           std::shared_ptr<const ScheduleContext> context);

}  // namespace spyre
