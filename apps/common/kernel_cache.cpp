// Kernels compiled on first use, cached on disk by a hash of their key (see kernel_cache.h).
#include "kernel_cache.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "content_hash.h"
#include "spyre/machine.h"

extern char **environ;

namespace spyre_apps {

namespace {

namespace fs = std::filesystem;


std::string hex(uint64_t v) {
    char s[17];
    std::snprintf(s, sizeof s, "%016llx", (unsigned long long)v);
    return s;
}

std::string read_all(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return "";
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::string cache_root() {
    if (const char *d = std::getenv("SPYRE_KERNEL_CACHE"); d && *d) return d;
    if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/spyre_halide";
    const char *home = std::getenv("HOME");
    return std::string(home && *home ? home : "/tmp") + "/.cache/spyre_halide";
}

// This project's shared libraries the generators load (the schedule templates, the machine model):
// beside bin/ in lib/ (a build tree) or lib/<multiarch>/ (an install), symlinks left out.
std::vector<std::string> project_libraries(const std::string &bin_dir) {
    std::vector<std::string> out;
    const fs::path lib = fs::path(bin_dir).parent_path() / "lib";
    std::error_code ec;
    for (fs::recursive_directory_iterator it(lib, ec), end; !ec && it != end; it.increment(ec)) {
        if (it.depth() > 1) {
            it.disable_recursion_pending();
            continue;
        }
        const std::string name = it->path().filename().string();
        if (name.rfind("libspyre", 0) == 0 && name.find(".so") != std::string::npos && !it->is_symlink() &&
            it->is_regular_file()) {
            out.push_back(it->path().string());
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

// A machine parameter's value as SPYRE_MACHINE_SET takes it, exactly.
std::string value_text(double v) {
    char s[64];
    if (v == (double)(long long)v && std::fabs(v) < 1e15) {
        std::snprintf(s, sizeof s, "%lld", (long long)v);
    } else {
        std::snprintf(s, sizeof s, "%.17g", v);
    }
    return s;
}

// A process compiling an entry holds its lock for the compile (seconds, a minute for the largest
// kernels); one holding it longer than this has stopped, and waiting on is an error naming it.
constexpr double kLockWaitSeconds = 1800;

// An exclusive flock on `path`, released when destroyed.
struct EntryLock {
    int fd = -1;
    EntryLock(const std::string &path, const std::string &what) {
        fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) throw std::runtime_error("kernel cache: cannot open " + path + ": " + std::strerror(errno));
        const auto start = std::chrono::steady_clock::now();
        bool said = false;
        while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            if (errno != EWOULDBLOCK && errno != EINTR) {
                close(fd);
                throw std::runtime_error("kernel cache: cannot lock " + path + ": " + std::strerror(errno));
            }
            const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (waited > kLockWaitSeconds) {
                close(fd);
                throw std::runtime_error("kernel cache: another process has held " + path + " for over " +
                                         std::to_string((int)kLockWaitSeconds) + " s compiling " + what +
                                         "; is it stopped?");
            }
            if (!said && waited > 10) {
                std::fprintf(stderr, "kernel cache: waiting for another process compiling %s ...\n", what.c_str());
                said = true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }
    ~EntryLock() { close(fd); }
};

// Runs argv with `env`, stdout and stderr into `log`; the exit status (or -1 if it could not start).
int run_logged(const std::vector<std::string> &argv, const std::vector<std::string> &env, const std::string &log) {
    std::vector<char *> a, e;
    for (const auto &s : argv) a.push_back(const_cast<char *>(s.c_str()));
    a.push_back(nullptr);
    for (const auto &s : env) e.push_back(const_cast<char *>(s.c_str()));
    e.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    const int rc = posix_spawn(&pid, a[0], &actions, nullptr, a.data(), e.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return -1;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The last non-empty line of a file (a generator's error line).
std::string last_line(const std::string &path) {
    std::stringstream s(read_all(path));
    std::string line, last;
    while (std::getline(s, line)) {
        if (!line.empty()) last = line;
    }
    return last;
}

}  // namespace

KernelCache::KernelCache(bool progress) : dir_(cache_root() + "/cxx"), progress_(progress) {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) throw std::runtime_error("kernel cache: cannot find this executable (/proc/self/exe)");
    bin_dir_ = self.parent_path().string();
}

std::string KernelCache::describe(const std::string &family, const KernelParams &params) {
    std::string s = "gen_" + family;
    for (const auto &kv : params) s += " " + kv.first + "=" + kv.second;
    return s;
}

std::string KernelCache::generator_path(const std::string &family) const { return bin_dir_ + "/gen_" + family; }

std::string KernelCache::key_text(const std::string &family, const KernelParams &params) {
    const std::string gen = generator_path(family);
    auto it = file_hashes_.find(gen);
    if (it == file_hashes_.end()) {
        const std::string bytes = read_all(gen);
        if (bytes.empty()) throw std::runtime_error("kernel cache: no generator " + gen + " (is gen_" + family + " built?)");
        it = file_hashes_.emplace(gen, hex(content_hash(bytes)) + " " + std::to_string(bytes.size())).first;
    }
    std::string key = "spyre-halide C++ kernel cache v1\ngenerator gen_" + family + " " + it->second + "\n";
    for (const std::string &library : project_libraries(bin_dir_)) {  // the planner and machine model it loads
        auto h = file_hashes_.find(library);
        if (h == file_hashes_.end()) {
            const std::string bytes = read_all(library);
            h = file_hashes_.emplace(library, hex(content_hash(bytes)) + " " + std::to_string(bytes.size())).first;
        }
        key += "library " + fs::path(library).filename().string() + " " + h->second + "\n";
    }
    for (const auto &kv : params) key += "param " + kv.first + "=" + kv.second + "\n";
    for (const spyre::MachineParameterInfo &p : spyre::default_machine().parameters) {
        key += "machine " + p.name + "=" + value_text(p.value) + "\n";
    }
    return key;
}

std::shared_ptr<const ProgramKernel> KernelCache::get(const std::string &family, const KernelParams &params) {
    std::lock_guard<std::mutex> guard(mutex_);
    const std::string key = key_text(family, params);
    if (auto it = loaded_.find(key); it != loaded_.end()) return it->second;

    const std::string id = hex(content_hash(key));
    const std::string name = family + "_" + id;  // the kernel's function (and profile) name
    const std::string entry = dir_ + "/" + id;
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) throw std::runtime_error("kernel cache: cannot create " + dir_ + ": " + ec.message());
    // One process compiles an entry; the others then find it.
    EntryLock lock(dir_ + "/" + id + ".lock", describe(family, params));

    bool valid = read_all(entry + "/key.txt") == key && fs::exists(entry + "/" + name + ".spyre");
    std::shared_ptr<const ProgramKernel> kernel;
    if (valid) {
        try {
            kernel = std::make_shared<const ProgramKernel>(entry, name);
            hits_++;
        } catch (const std::exception &e) {
            // A damaged entry (a crash mid-write, a file lost): compiled again below.
            if (progress_) std::fprintf(stderr, "kernel cache: %s is damaged (%s); compiling it again\n", entry.c_str(), e.what());
            valid = false;
        }
    }
    if (!valid) {
        // A stale or damaged entry is moved aside in one step, then removed.
        if (fs::exists(entry, ec)) {
            const std::string aside = entry + ".stale-" + std::to_string(getpid());
            fs::rename(entry, aside, ec);
            fs::remove_all(aside, ec);
        }
        const std::string scratch = entry + ".compiling";
        fs::remove_all(scratch, ec);
        fs::create_directories(scratch, ec);
        if (ec) throw std::runtime_error("kernel cache: cannot create " + scratch + ": " + ec.message());
        std::vector<std::string> argv = {generator_path(family), "-g", family, "-f", name, "-o", scratch, "-e",
                                         "c_header", "-target=spyre"};
        for (const auto &kv : params) argv.push_back(kv.first + "=" + kv.second);
        // The generator compiles for this process's machine (the one the key names), whatever the environment says.
        std::string machine_set;
        for (const spyre::MachineParameterInfo &p : spyre::default_machine().parameters) {
            machine_set += (machine_set.empty() ? "" : ",") + p.name + "=" + value_text(p.value);
        }
        std::vector<std::string> env;
        for (char **e = environ; *e; e++) {
            const std::string v = *e;
            if (v.rfind("SPYRE_MACHINE=", 0) == 0 || v.rfind("SPYRE_MACHINE_SET=", 0) == 0) continue;
            env.push_back(v);
        }
        env.push_back("SPYRE_MACHINE_SET=" + machine_set);
        if (progress_) std::fprintf(stderr, "kernel cache: compiling %s ...\n", describe(family, params).c_str());
        const std::string log = scratch + "/generator.log";
        const int status = run_logged(argv, env, log);
        if (status != 0) {
            const std::string why = last_line(log);
            fs::remove_all(scratch, ec);
            throw std::runtime_error(describe(family, params) + ": " +
                                     (why.empty() ? "exit status " + std::to_string(status) : why));
        }
        // The key last: an entry is valid only once everything else is in it.
        {
            std::ofstream key_file(scratch + "/key.txt", std::ios::binary);
            key_file << key;
            key_file.close();
            if (!key_file) throw std::runtime_error("kernel cache: cannot write " + scratch + "/key.txt");
        }
        kernel = std::make_shared<const ProgramKernel>(scratch, name);  // what the generator wrote is a program
        fs::rename(scratch, entry, ec);
        if (ec) throw std::runtime_error("kernel cache: cannot move " + scratch + " to " + entry + ": " + ec.message());
        kernel = std::make_shared<const ProgramKernel>(entry, name);
        compiled_++;
    }
    loaded_.emplace(key, kernel);
    return kernel;
}

}  // namespace spyre_apps
