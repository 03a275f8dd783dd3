// A generator run's outputs staged in a private directory and published together (see staged_outputs.h).
#include "staged_outputs.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>
#include <vector>

namespace spyre {

namespace {

namespace fs = std::filesystem;

// An exclusive flock on a file, released when destroyed.
class FileLock {
public:
    // "" once held, else why not (cannot open, or still held by another after wait_seconds).
    std::string acquire(const std::string &path, double wait_seconds) {
        fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0) return "cannot open the lock file '" + path + "': " + std::strerror(errno);
        using Clock = std::chrono::steady_clock;
        const auto start = Clock::now();
        bool said_waiting = false;
        while (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
            if (errno != EWOULDBLOCK && errno != EINTR) return "cannot lock '" + path + "': " + std::strerror(errno);
            const double waited = std::chrono::duration<double>(Clock::now() - start).count();
            if (waited >= wait_seconds) {
                return "another run has held the lock '" + path + "' for over " + std::to_string((int)wait_seconds) +
                       " s while publishing the same outputs; is a generator for the same -o/-f stopped?";
            }
            if (!said_waiting && waited >= 2) {
                std::cerr << "waiting for another run publishing the same outputs (lock '" << path << "')\n";
                said_waiting = true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return "";
    }
    ~FileLock() {
        if (fd_ >= 0) close(fd_);  // releases the lock
    }

private:
    int fd_ = -1;
};

}  // namespace

std::string StagedOutputs::stage(const std::string &output_dir, const std::string &function_name) {
    output_dir_ = output_dir;
    function_name_ = function_name;
    std::string pattern = output_dir + "/." + function_name + ".staging-XXXXXX";
    if (!mkdtemp(pattern.data())) {
        return "cannot create a staging directory like '" + pattern + "' in the output directory: " +
               std::strerror(errno);
    }
    staging_dir_ = pattern;
    return "";
}

std::string StagedOutputs::publish(double lock_wait_seconds) {
    std::error_code ec;
    std::vector<fs::path> staged;
    for (const auto &entry : fs::directory_iterator(staging_dir_, ec)) staged.push_back(entry.path());
    if (ec) return "cannot list the staging directory '" + staging_dir_ + "': " + ec.message();

    FileLock lock;
    const std::string error = lock.acquire(output_dir_ + "/." + function_name_ + ".spyre-lock", lock_wait_seconds);
    if (!error.empty()) return error;
    for (const fs::path &from : staged) {
        const fs::path to = fs::path(output_dir_) / from.filename();
        if (std::rename(from.c_str(), to.c_str()) != 0) {
            return "cannot move '" + from.string() + "' to '" + to.string() + "': " + std::strerror(errno);
        }
    }
    return "";
}

StagedOutputs::~StagedOutputs() {
    if (staging_dir_.empty()) return;
    std::error_code ec;
    fs::remove_all(staging_dir_, ec);
}

}  // namespace spyre
