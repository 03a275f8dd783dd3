// Measuring one candidate schedule for the Spyre autoscheduler: the same
// generator, compiled in a child process with the candidate's knob values
// (`-e stmt target=spyre`, which runs the Spyre lowering and writes the
// program, without LLVM code generation), then the program simulated timing
// only (docs/timing-model.md) on this machine description.
//
// Assumes `generator_exe` is a generator driver of this project (it writes
// <output_dir>/<generator>.spyre) and that the candidates' knobs are that
// generator's GeneratorParams.
#pragma once

#include <chrono>
#include <string>

#include "knob_search.h"

namespace spyre::autoscheduler {

struct CandidateCompiler {
    std::string generator_exe;  // usually /proc/self/exe (the generator being autoscheduled)
    std::string generator;      // -g name
    KnobValues fixed;           // the generator's other params
    std::string work_dir;       // scratch space; one subdirectory per evaluation
    // A compile still running at the deadline is killed (a failed candidate),
    // so the search's time budget bounds the whole search.
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// Compiles and simulates `knobs` in <work_dir>/<index>/ (`index` unique per
// evaluation, so concurrent ones use separate directories). Never throws: a
// failure is a result with an error and an infinite time.
CandidateResult evaluate_candidate(const CandidateCompiler &compiler, const KnobValues &knobs, int index);

// <work_dir>/<index>, created if missing; "" with `error` set when it cannot be.
std::string make_candidate_directory(const std::string &work_dir, int index, std::string *error);

// The simulated time of a program file, timing only (throws spyre::Error).
double simulate_program_file_us(const std::string &program_path);

}  // namespace spyre::autoscheduler
