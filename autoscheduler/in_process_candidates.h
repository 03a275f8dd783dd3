// Measuring one candidate schedule of the Spyre autoscheduler in this process: the generator being
// autoscheduled is created again from Halide's generator registry with the candidate's knob
// values, scheduled into a ScheduleContext of its own (target/driver/schedule_context.h) and lowered
// (Pipeline::compile_to_module: the Spyre lowering runs and writes the program, no LLVM code
// generation); the program is then simulated timing only. It is what a child process
// `gen_X -g X -o DIR -e stmt target=spyre ...` did (candidate_evaluation.h), without starting a
// process, loading Halide and building the generator per candidate.
//
// Deadline: the candidate's context carries the search's deadline, and the Spyre lowering stops at
// its first pass boundary past it (a failed candidate). Halide's own lowering before the Spyre pass
// is not interrupted; for the suite's generators it takes milliseconds.
//
// Assumes: it runs inside a generator driver of this project, where `generator` is registered and
// the schedule context library is the one the generator's code uses. Several evaluations may run
// at once on different threads: each has its own context, directory and Halide pipeline.
#pragma once

#include <chrono>
#include <string>

#include "knob_search.h"
#include "spyre/machine.h"

namespace spyre::autoscheduler {

struct InProcessCompiler {
    std::string generator;   // the registered generator name (-g)
    KnobValues fixed;        // its other params
    std::string work_dir;    // scratch space; one subdirectory per evaluation
    MachineDescription machine;
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// Compiles and simulates `knobs` in <work_dir>/<index>/. Never throws: a failure is a result with
// an error (the compiler's first line) and an infinite time.
CandidateResult evaluate_candidate_in_process(const InProcessCompiler &compiler, const KnobValues &knobs, int index);

}  // namespace spyre::autoscheduler
