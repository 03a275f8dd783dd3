// The Spyre autoscheduler, a Halide 14 autoscheduler plugin named "Spyre":
//
//   gen_bmm -g bmm -o out -target=spyre auto_schedule=true
//           -p build/lib/libautoschedule_spyre.so -s Spyre ...   (one command line)
//
// Halide calls it with the generator's pipeline. It finds the schedule
// template the generator registered for that pipeline
// (schedules/schedule_template.h), searches the template's knobs (tiles,
// core counts, staging levels, layouts, double buffering) with the timing
// model as the cost (autoscheduler/knob_search.h: every candidate compiled
// in this process, in a schedule context of its own, and simulated timing
// only: in_process_candidates.h), applies the best, and
// returns code a person can paste (`-e schedule` writes it to
// <name>.schedule.h). Progress goes to stderr.
//
// The same plugin also provides the legalized stock autoschedulers
// (legalized_autoschedulers.cpp).
//
// Environment: SPYRE_AUTOSCHEDULE_BUDGET_S (default 50, so the generator run
// with its final compile stays within a minute) bounds the search;
// SPYRE_AUTOSCHEDULE_WORKERS (default 2) candidates compile at once (threads);
// SPYRE_AUTOSCHEDULE_QUIET=1 prints only the summary; SPYRE_AUTOSCHEDULE_ISOLATION=process
// compiles each candidate in a child process instead (candidate_evaluation.h), which a compile
// can be killed in at any point, not only at a pass boundary of the Spyre lowering.
//
// Assumes it runs inside a generator driver of this project, linked with
// spyre_schedules: the template registry is libspyre_schedule_templates.so,
// which the generator and this plugin share.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "Halide.h"
#include "candidate_evaluation.h"
#include "in_process_candidates.h"
#include "schedule_context.h"
#include "knob_search.h"
#include "schedule_template.h"
#include "template_lookup.h"

namespace spyre::autoscheduler {
namespace {

double env_double(const char *name, double fallback) {
    const char *s = std::getenv(name);
    if (!s || !*s) return fallback;
    char *end = nullptr;
    const double v = std::strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= 0)) {
        throw Halide::CompileError(std::string("Spyre autoscheduler: ") + name + "='" + s +
                                   "' is not a non-negative number");
    }
    return v;
}

// now + seconds, saturated: a budget of 1e10 s or inf means no deadline, not an overflowed one in the past.
std::chrono::steady_clock::time_point deadline_after(double seconds) {
    using Clock = std::chrono::steady_clock;
    const double left = std::chrono::duration<double>(Clock::time_point::max() - Clock::now()).count();
    if (!(seconds < left / 2)) return Clock::time_point::max();
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string self_executable() {
    std::error_code ec;
    const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) throw Halide::CompileError("Spyre autoscheduler: cannot find its own executable (/proc/self/exe)");
    return p.string();
}

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it
// when the search ends, however it ends: by the destructor, or, when the
// process is killed (SIGTERM, SIGINT, SIGKILL) or crashes, by a reaper: a
// /bin/sh started in its own session (so the terminal's Ctrl-C does not reach
// it) that waits on a pipe whose only write end this process holds. When this
// process ends the pipe reads end-of-file and the reaper removes the directory.
// The write end is close-on-exec, so candidate processes do not keep it open.
struct ScratchDirectory {
    std::string path;
    int reaper_pipe = -1;
    pid_t reaper = -1;
    ScratchDirectory() {
        const char *tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/spyre-autoschedule-XXXXXX";
        if (!mkdtemp(pattern.data())) {
            throw Halide::CompileError("Spyre autoscheduler: cannot create a scratch directory like " + pattern);
        }
        path = pattern;
        start_reaper();
    }
    ~ScratchDirectory() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
        if (reaper_pipe >= 0) close(reaper_pipe);  // the reaper reads end-of-file, finds nothing and exits
        if (reaper > 0) waitpid(reaper, nullptr, 0);
    }
    ScratchDirectory(const ScratchDirectory &) = delete;
    ScratchDirectory &operator=(const ScratchDirectory &) = delete;

private:
    void start_reaper() {
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) != 0) return;  // no reaper: the destructor still cleans up a normal end
        const pid_t pid = fork();
        if (pid == 0) {  // only async-signal-safe calls until exec (this process may have threads)
            setsid();
            if (fds[0] == 0) {
                fcntl(0, F_SETFD, 0);  // stdin was closed, so the pipe got fd 0: keep it across exec
            } else {
                dup2(fds[0], 0);
            }
            // Nothing else of the generator's: its stdout and stderr pipes must not stay open in the reaper.
            const int null_fd = open("/dev/null", O_WRONLY);
            if (null_fd >= 0) {
                dup2(null_fd, 1);
                dup2(null_fd, 2);
            }
            for (int fd = 3; fd < 1024; fd++) close(fd);
            execl("/bin/sh", "sh", "-c", "read ignored; rm -rf -- \"$0\"", path.c_str(), (char *)nullptr);
            _exit(127);
        }
        close(fds[0]);
        if (pid < 0) {
            close(fds[1]);
            return;
        }
        reaper = pid;
        reaper_pipe = fds[1];
    }
};

std::string format_us(double us) {
    if (!std::isfinite(us)) return "failed";
    std::ostringstream os;
    os.precision(us < 10 ? 3 : 1);
    os << std::fixed << us << " us";
    return os.str();
}

// The pasteable source: the measured summary as comments, then the template's code.
std::string schedule_source(const ScheduleTemplate &t, const SearchResult &r) {
    std::ostringstream os;
    os << "// Spyre autoscheduler: gen_" << t.generator;
    for (const auto &kv : t.fixed) os << " " << kv.first << "=" << kv.second;
    os << "\n// " << r.evaluated.size() << " candidates of " << r.space_size << " measured in " << std::fixed;
    os.precision(1);
    os << r.seconds << " s" << (r.exhaustive ? " (the whole space)" : r.budget_exhausted ? " (time budget reached)" : "")
       << "\n// best: " << knob_string(t, r.best.knobs) << " -> " << format_us(r.best.simulated_us) << " simulated"
       << "\n// start (the generator's own knobs): " << knob_string(t, r.start.knobs) << " -> "
       << format_us(r.start.simulated_us) << "\n// On the command line: gen_" << t.generator << " ... "
       << knob_string(t, r.best.knobs) << "\n"
       << "// In the generator's schedule() for Spyre (names as in generators/" << t.generator << "_generator.cpp):\n";
    os << t.source(r.best.knobs);
    return os.str();
}

void autoschedule_for_spyre(const Halide::Pipeline &pipeline, const Halide::Target &target,
                            const Halide::MachineParams &params, Halide::AutoSchedulerResults *results) {
    const ScheduleTemplate *tpl = &template_for(pipeline, "Spyre autoscheduler");

    SearchOptions options;
    options.budget_seconds = env_double("SPYRE_AUTOSCHEDULE_BUDGET_S", 50);  // the whole generator run stays within a minute
    options.workers = std::max(1, (int)env_double("SPYRE_AUTOSCHEDULE_WORKERS", 2));
    const bool quiet = std::getenv("SPYRE_AUTOSCHEDULE_QUIET") && std::string(std::getenv("SPYRE_AUTOSCHEDULE_QUIET")) == "1";

    const char *isolation_env = std::getenv("SPYRE_AUTOSCHEDULE_ISOLATION");
    const std::string isolation = isolation_env && *isolation_env ? isolation_env : "thread";
    if (isolation != "thread" && isolation != "process") {
        throw Halide::CompileError("Spyre autoscheduler: SPYRE_AUTOSCHEDULE_ISOLATION='" + isolation +
                                   "' is neither thread (candidates compiled in this process) nor process");
    }

    const ScratchDirectory scratch;
    // A compile still running 5 s after the budget is stopped: the budget bounds the search.
    const auto deadline = deadline_after(options.budget_seconds + 5);
    CandidateCompiler compiler;  // SPYRE_AUTOSCHEDULE_ISOLATION=process
    compiler.generator_exe = isolation == "process" ? self_executable() : "";
    compiler.generator = tpl->generator;
    compiler.fixed = tpl->fixed;
    compiler.work_dir = scratch.path;
    compiler.deadline = deadline;
    InProcessCompiler in_process;  // the default: the generator's own machine, from its schedule context
    in_process.generator = tpl->generator;
    in_process.fixed = tpl->fixed;
    in_process.work_dir = scratch.path;
    in_process.machine = ScheduleContext::active().machine();
    in_process.deadline = deadline;

    std::atomic<int> slot{0};
    auto evaluate = [&](const KnobValues &knobs) {
        return isolation == "process" ? evaluate_candidate(compiler, knobs, slot++)
                                      : evaluate_candidate_in_process(in_process, knobs, slot++);
    };
    const auto started = std::chrono::steady_clock::now();
    options.on_result = [&](const CandidateResult &r, const CandidateResult &best, int n) {
        if (quiet) return;
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        std::fprintf(stderr, "spyre autoscheduler: %s [%5.1f s] #%d %s -> %s%s (best %s)\n", tpl->generator.c_str(), t, n,
                     knob_string(*tpl, r.knobs).c_str(), format_us(r.simulated_us).c_str(),
                     r.ok() ? "" : (": " + r.error.substr(0, 160)).c_str(), format_us(best.simulated_us).c_str());
    };
    const SearchResult r = search_knobs(tpl->knobs, evaluate, options);

    if (!r.best.ok()) {
        throw Halide::CompileError("Spyre autoscheduler: " + tpl->generator + ": no candidate compiled; the first error: " +
                                   (r.evaluated.empty() ? std::string("none measured") : r.evaluated.front().error));
    }
    std::fprintf(stderr,
                 "spyre autoscheduler: %s: %zu of %lld candidates in %.1f s%s; best %s (%s), the generator's own knobs %s\n",
                 tpl->generator.c_str(), r.evaluated.size(), (long long)r.space_size, r.seconds,
                 r.exhaustive ? " (the whole space)" : r.budget_exhausted ? " (time budget reached)" : "",
                 format_us(r.best.simulated_us).c_str(), knob_string(*tpl, r.best.knobs).c_str(),
                 format_us(r.start.simulated_us).c_str());

    tpl->apply(r.best.knobs);
    if (results) {
        results->scheduler_name = "Spyre";
        results->target = target;
        results->machine_params_string = params.to_string();
        results->schedule_source = schedule_source(*tpl, r);
    }
}

// Registered when the plugin is loaded (-p), like Halide's own autoschedulers.
struct RegisterSpyreAutoscheduler {
    RegisterSpyreAutoscheduler() { Halide::Pipeline::add_autoscheduler("Spyre", autoschedule_for_spyre); }
} register_spyre_autoscheduler;

}  // namespace
}  // namespace spyre::autoscheduler
