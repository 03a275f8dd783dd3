// Compiling and simulating one candidate schedule (see candidate_evaluation.h).
#include "candidate_evaluation.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "spyre/error.h"
#include "spyre/layout.h"
#include "spyre/machine.h"
#include "spyre/program_format.h"
#include "spyre/simulator.h"
#include "spyre/validator.h"

extern char **environ;

namespace spyre::autoscheduler {
namespace {

using Clock = std::chrono::steady_clock;

// Runs argv with stdout and stderr into `log_path`; returns the exit status,
// or -1 when it had to be killed at `deadline`.
int run_command(const std::vector<std::string> &argv, const std::string &log_path, Clock::time_point deadline,
                std::string *failure) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    std::vector<char *> args;
    for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        *failure = "cannot start " + argv[0] + ": " + std::strerror(rc);
        return -1;
    }
    for (;;) {
        int status = 0;
        const pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) {
            if (WIFEXITED(status)) return WEXITSTATUS(status);
            *failure = "the compiler was stopped by signal " + std::to_string(WTERMSIG(status));
            return -1;
        }
        if (Clock::now() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            *failure = "the compile was stopped at the end of the search's time budget";
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

// The compiler's error: its first line with "error" in it, else its last line.
std::string error_from_log(const std::string &log_path) {
    std::ifstream f(log_path);
    std::string line, last;
    while (std::getline(f, line)) {
        if (line.empty()) continue;
        if (line.find("rror") != std::string::npos) return line;
        last = line;
    }
    return last.empty() ? "the compiler failed without a message" : last;
}

}  // namespace

double simulate_program_file_us(const std::string &program_path) {
    const MachineDescription &m = default_machine();
    const Program p = decode_program(read_file_bytes(program_path));
    validate_program(p, m);
    std::vector<ArgumentBinding> args;
    for (const ProgramArgument &a : p.args) {
        args.push_back(ArgumentBinding{nullptr, layout_addressing(a.shape, a.layout, m.stick_bytes).total_bytes});
    }
    const std::vector<double> params(p.params.size(), 1.0);  // timing does not depend on scalar values
    SimulationOptions o;
    o.functional = false;
    o.check_uninitialized = false;
    return simulate_program(p, m, args, params, o).simulated_us;
}

std::string make_candidate_directory(const std::string &work_dir, int index, std::string *error) {
    const std::string dir = work_dir + "/" + std::to_string(index);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
        *error = "cannot create the scratch directory '" + dir + "': " + std::strerror(errno);
        return "";
    }
    return dir;
}

CandidateResult evaluate_candidate(const CandidateCompiler &c, const KnobValues &knobs, int index) {
    const auto start = Clock::now();
    CandidateResult r;
    r.knobs = knobs;
    const std::string dir = make_candidate_directory(c.work_dir, index, &r.error);
    if (dir.empty()) return r;
    std::vector<std::string> argv = {c.generator_exe, "-g", c.generator, "-o", dir, "-e", "stmt", "target=spyre"};
    for (const auto &kv : c.fixed) argv.push_back(kv.first + "=" + kv.second);
    for (const auto &kv : knobs) argv.push_back(kv.first + "=" + kv.second);
    const std::string program = dir + "/" + c.generator + ".spyre";
    std::remove(program.c_str());
    std::string failure;
    const int status = run_command(argv, dir + "/log", c.deadline, &failure);
    if (status != 0) {
        r.error = failure.empty() ? error_from_log(dir + "/log") : failure;
    } else {
        try {
            r.simulated_us = simulate_program_file_us(program);
        } catch (const std::exception &e) {
            r.error = std::string("simulation failed: ") + e.what();
        }
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return r;
}

}  // namespace spyre::autoscheduler
