// Replacing the device region by a call into the Spyre runtime: the encoded
// program is embedded in the host object as a constant buffer (picked up by
// Halide's InferArguments and emitted like GPU kernels are), and the core loop
// becomes
//   spyre_status = spyre_run_program(__user_context, <program>, N, {bufs...}, P, {params...})
//   assert(spyre_status == 0, spyre_status)
// so the generated function keeps Halide's AOT signature and returns the
// runtime's error code on failure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "Halide.h"

namespace spyre {
namespace compiler {

struct RuntimeCallArguments {
    std::string kernel_name;
    std::vector<uint8_t> program;             // encoded program
    std::vector<Halide::Expr> buffers;        // halide_buffer_t* of each tensor, argument-table order
    std::vector<Halide::Expr> scalar_params;  // in program order
    bool has_user_context = false;            // target has the user_context feature
};

Halide::Internal::Stmt make_runtime_call(const RuntimeCallArguments &args);

// `pipeline` preceded by spyre_begin_kernel_call(__user_context): the first thing
// the generated function does, before Halide's own argument checks, so every kernel
// call starts with an empty spyre_last_error() (a call refused by those checks, which
// report through halide_error, never leaves an earlier call's message there).
Halide::Internal::Stmt begin_kernel_call(const Halide::Internal::Stmt &pipeline, bool has_user_context);

// `s` with the statement `region` replaced by `replacement`.
Halide::Internal::Stmt replace_statement(const Halide::Internal::Stmt &s, const Halide::Internal::IRNode *region,
                                         const Halide::Internal::Stmt &replacement);

}  // namespace compiler
}  // namespace spyre
