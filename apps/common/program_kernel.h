// One compiled Spyre program (the <name>.spyre file a generator writes, with the
// <name>.h header of its Halide entry point), called like the generated AOT
// function: the same arguments in the same order (buffers and scalars), run
// through spyre_run_program, the entry point a linked kernel calls. So an app
// can use a kernel compiled while it runs (kernel_cache.h) exactly as one it
// was linked with.
//
// Assumes: the header declares `int <name>(...)` with Halide's AOT argument
// names (`struct halide_buffer_t *_X_buffer` for buffer X, `T _p` for scalar
// p), and the program's argument table and parameter list name the same
// arguments (both come from one generator run).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "HalideRuntime.h"

namespace spyre_apps {

// One argument of a call: a buffer or a scalar.
struct KernelArg {
    halide_buffer_t *buffer = nullptr;
    double scalar = 0;
    bool is_buffer = false;
    KernelArg(halide_buffer_t *b) : buffer(b), is_buffer(true) {}
    KernelArg(double v) : scalar(v) {}
    KernelArg(float v) : scalar(v) {}
    KernelArg(int v) : scalar(v) {}
};

class ProgramKernel {
public:
    // Reads <dir>/<name>.spyre and <dir>/<name>.h; throws std::runtime_error naming the file on any problem.
    ProgramKernel(const std::string &dir, const std::string &name);

    const std::string &name() const { return name_; }
    const std::string &program_path() const { return program_path_; }
    // The call's arguments in the AOT order, and whether each is a buffer.
    const std::vector<std::pair<std::string, bool>> &signature() const { return signature_; }

    // Runs the program; the arguments as the AOT function takes them. Returns the runtime's
    // status (0, or an error code with spyre_last_error() set); a wrong argument count or kind throws.
    int call(const std::vector<KernelArg> &args) const;

private:
    std::string name_, program_path_;
    std::vector<uint8_t> bytes_;
    std::vector<std::pair<std::string, bool>> signature_;  // AOT order
    std::vector<int> table_;   // the program's argument table: index into signature_ per entry
    std::vector<int> params_;  // the program's scalar parameters: index into signature_ per entry
};

}  // namespace spyre_apps
