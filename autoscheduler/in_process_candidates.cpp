// Compiling and simulating one candidate schedule in this process (see in_process_candidates.h).
#include "in_process_candidates.h"

#include <exception>

#include "Halide.h"
#include "candidate_evaluation.h"
#include "schedule_context.h"

namespace spyre::autoscheduler {
namespace {

using Clock = std::chrono::steady_clock;

// Halide 14 keeps a generator's configure and build steps protected (its stubs use them); this
// reaches them through the standard pointer-to-member idiom, as the compiler tests do.
struct GeneratorSteps : Halide::Internal::GeneratorBase {
    static void configure(Halide::Internal::GeneratorBase *g) { (g->*(&GeneratorSteps::call_configure))(); }
    static Halide::Pipeline build(Halide::Internal::GeneratorBase *g) { return (g->*(&GeneratorSteps::build_pipeline))(); }
};

// The first line of a compiler message (Halide prefixes "Error: ").
std::string first_line(const std::string &what) {
    std::string s = what;
    if (s.rfind("Error: ", 0) == 0) s = s.substr(7);
    const size_t eol = s.find('\n');
    return eol == std::string::npos ? s : s.substr(0, eol);
}

}  // namespace

CandidateResult evaluate_candidate_in_process(const InProcessCompiler &c, const KnobValues &knobs, int index) {
    const auto start = Clock::now();
    CandidateResult r;
    r.knobs = knobs;
    const std::string dir = make_candidate_directory(c.work_dir, index, &r.error);
    if (dir.empty()) return r;
    auto context = ScheduleContext::make(true, c.machine);
    DriverOptions driver;
    driver.output_dir = dir;
    driver.function_name = c.generator;
    driver.generator_name = c.generator;
    context->set_driver_options(driver);
    context->set_deadline(c.deadline);
    try {
        ScheduleContext::Use use(context);
        const Halide::Target target("x86-64-linux");
        auto generator = Halide::Internal::GeneratorRegistry::create(c.generator, Halide::GeneratorContext(target));
        Halide::Internal::GeneratorParamsMap params;
        for (const auto &kv : c.fixed) params[kv.first] = kv.second;
        for (const auto &kv : knobs) params[kv.first] = kv.second;
        generator->set_generator_param_values(params);
        GeneratorSteps::configure(generator.get());
        Halide::Pipeline pipeline = GeneratorSteps::build(generator.get());
        pipeline.compile_to_module(pipeline.infer_arguments(), c.generator, target);
    } catch (const Halide::Error &e) {
        r.error = first_line(e.what());
    } catch (const std::exception &e) {
        r.error = first_line(e.what());
    }
    if (r.error.empty()) {
        try {
            r.simulated_us = simulate_program_file_us(dir + "/" + c.generator + ".spyre");
        } catch (const std::exception &e) {
            r.error = std::string("simulation failed: ") + e.what();
        }
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return r;
}

}  // namespace spyre::autoscheduler
