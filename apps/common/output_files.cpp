// Checked output files of the tools and apps (see output_files.h).
#include "output_files.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <stdexcept>

std::string output_path_problem(const std::string &path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path p(path);
    if (fs::is_directory(p, ec)) return "it is a directory";
    if (fs::exists(p, ec)) return access(path.c_str(), W_OK) == 0 ? "" : std::string("it is not writable: ") + std::strerror(errno);
    const fs::path parent = p.parent_path().empty() ? fs::path(".") : p.parent_path();
    if (fs::exists(parent, ec) && !fs::is_directory(parent, ec)) return parent.string() + " is not a directory";
    if (!fs::is_directory(parent, ec)) return "the directory " + parent.string() + " does not exist";
    if (access(parent.c_str(), W_OK) != 0) return "the directory " + parent.string() + " is not writable: " + std::strerror(errno);
    return "";
}

void write_text_file(const std::string &path, const std::string &text) {
    std::FILE *f = std::fopen(path.c_str(), "w");
    if (!f) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
    const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0;
    const int write_errno = errno;
    const bool closed = std::fclose(f) == 0;
    if (!written || !closed) {
        throw std::runtime_error("cannot write " + path + ": " + std::strerror(written ? errno : write_errno));
    }
}

namespace {

const char *stdout_program = "";

void fail_on_stdout_error() {
    std::cout.flush();
    errno = 0;
    const bool flushed = std::fflush(stdout) == 0 && !std::ferror(stdout) && std::cout.good();
    if (flushed) return;
    const int err = errno;
    std::fprintf(stderr, "%s: cannot write the standard output: %s\n", stdout_program,
                 err ? std::strerror(err) : "write error");
    std::fflush(stderr);
    std::_Exit(1);
}

}  // namespace

void check_stdout_at_exit(const char *program) {
    stdout_program = program;
    std::atexit(fail_on_stdout_error);
}
