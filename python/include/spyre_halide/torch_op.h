// Glue between Halide 14's `-e pytorch_wrapper` output of a Spyre build and a
// torch C++ extension (the convention of Halide's apps/HelloPyTorch).
//
// Include this header before any generated <fn>.pytorch.h. It supplies what
// the generated wrapper assumes but Halide 14 does not define for fp16:
// `float16_t` (the wrapper writes Buffer<float16_t>) is torch's c10::Half,
// with halide_type_of<c10::Half>() = float16, so fp16 tensors wrap without a
// copy. Then `spyre_torch::op("bmm", &bmm_th_, bmm_metadata())` makes a
// callable for pybind11's m.def that
//   - checks every tensor before the kernel runs (a CPU tensor, the
//     argument's dtype and rank, contiguous) and raises a Python exception
//     naming the argument and what was expected;
//   - turns a failing kernel (Halide's argument checks, the Spyre runtime's
//     buffer checks, an exhausted device) into a Python RuntimeError with the
//     kernel's own message instead of the wrapper's "Halide call failed".
// Halide's error messages are captured by an error handler installed once per
// extension (spyre_torch::install_error_handler(), called by the generated
// module init); nothing aborts the interpreter.
//
// Assumes: the kernels are Halide 14 AOT functions of buffers and scalars,
// with metadata (every generator build has it); tensors live on the CPU (the
// Spyre runtime moves them to the simulated card and back on each call).
#pragma once

#include <torch/extension.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "HalideBuffer.h"
#include "HalideRuntime.h"

using float16_t = c10::Half;

template<>
HALIDE_ALWAYS_INLINE halide_type_t halide_type_of<c10::Half>() {
    return halide_type_t(halide_type_float, 16);
}

#include "HalidePyTorchHelpers.h"
#include "spyre/spyre_runtime.h"

namespace spyre_torch {

// The last message Halide's runtime reported in this thread (the handler keeps it).
inline std::string &last_halide_error() {
    thread_local std::string message;
    return message;
}

inline void record_halide_error(void *, const char *message) {
    std::string text = message ? message : "";
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    last_halide_error() = text;
}

inline void install_error_handler() { halide_set_error_handler(record_halide_error); }

// The torch dtype a Halide buffer type is passed as, or Undefined if none.
inline at::ScalarType torch_dtype_of(halide_type_t t) {
    if (t.code == halide_type_float && t.bits == 16) return at::kHalf;
    if (t.code == halide_type_float && t.bits == 32) return at::kFloat;
    if (t.code == halide_type_float && t.bits == 64) return at::kDouble;
    if (t.code == halide_type_int && t.bits == 8) return at::kChar;
    if (t.code == halide_type_int && t.bits == 16) return at::kShort;
    if (t.code == halide_type_int && t.bits == 32) return at::kInt;
    if (t.code == halide_type_int && t.bits == 64) return at::kLong;
    if (t.code == halide_type_uint && t.bits == 8) return at::kByte;
    if (t.code == halide_type_uint && t.bits == 1) return at::kBool;
    return at::ScalarType::Undefined;
}

// torch's Python name of a dtype ("float16", ...).
inline std::string dtype_name(at::ScalarType t) {
    switch (t) {
    case at::kHalf: return "float16";
    case at::kFloat: return "float32";
    case at::kDouble: return "float64";
    case at::kBFloat16: return "bfloat16";
    case at::kChar: return "int8";
    case at::kByte: return "uint8";
    case at::kShort: return "int16";
    case at::kInt: return "int32";
    case at::kLong: return "int64";
    case at::kBool: return "bool";
    case at::ScalarType::Undefined: return "?";
    default: return c10::toString(t);
    }
}

// "A (argument 1 of bmm): expected a contiguous CPU float16 tensor of 3 dimensions, got ..."
inline std::string check_tensor(const char *kernel, int position, const halide_filter_argument_t &arg,
                                const at::Tensor &t) {
    const at::ScalarType want = torch_dtype_of(arg.type);
    std::ostringstream expected;
    expected << "a contiguous CPU " << dtype_name(want) << " tensor of "
             << arg.dimensions << " dimension" << (arg.dimensions == 1 ? "" : "s");
    std::ostringstream got;
    if (!t.defined()) {
        got << "an undefined tensor";
    } else {
        got << "a " << (t.is_contiguous() ? "" : "non-contiguous ") << t.device() << " " << dtype_name(t.scalar_type())
            << " tensor of shape " << t.sizes();
    }
    const bool ok = t.defined() && t.device().is_cpu() && t.scalar_type() == want && t.dim() == arg.dimensions &&
                    t.is_contiguous();
    if (ok) return "";
    std::ostringstream message;
    message << kernel << ": argument " << position << " '" << arg.name << "' ("
            << (arg.kind == halide_argument_kind_output_buffer ? "output" : "input") << ") must be " << expected.str()
            << ", got " << got.str();
    return message.str();
}

template<typename T>
constexpr bool is_tensor_argument() {
    return std::is_same<std::decay_t<T>, at::Tensor>::value;
}

// Wraps a generated <fn>_th_ as a callable for pybind11 (see the file comment).
template<typename... Args>
auto op(const char *kernel, int (*th_function)(Args...), const halide_filter_metadata_t *metadata) {
    return [kernel, th_function, metadata](Args... args) {
        // Check the tensors against the kernel's arguments (metadata order = call order).
        int position = 0;
        std::string problem;
        auto check_one = [&](auto &value) {
            using T = decltype(value);
            if constexpr (is_tensor_argument<T>()) {
                if (problem.empty() && position < metadata->num_arguments) {
                    problem = check_tensor(kernel, position + 1, metadata->arguments[position], value);
                }
            }
            ++position;
        };
        (check_one(args), ...);
        if (!problem.empty()) throw pybind11::value_error(problem);

        last_halide_error().clear();
        try {
            py::gil_scoped_release release;  // the simulator runs without the interpreter lock
            th_function(args...);
        } catch (const c10::Error &e) {
            std::string message = last_halide_error();
            if (message.empty()) message = spyre_last_error();
            if (message.empty()) message = e.what_without_backtrace();
            throw std::runtime_error(std::string(kernel) + " failed: " + message);
        }
    };
}

// A docstring listing the arguments: "bmm(A: float16[3 dims], B: ..., C: ... (output))".
inline std::string signature(const char *kernel, const halide_filter_metadata_t *metadata) {
    std::ostringstream s;
    s << kernel << "(";
    for (int i = 0; i < metadata->num_arguments; ++i) {
        const halide_filter_argument_t &a = metadata->arguments[i];
        s << (i ? ", " : "") << a.name << ": ";
        s << dtype_name(torch_dtype_of(a.type));
        if (a.kind != halide_argument_kind_input_scalar) s << "[" << a.dimensions << " dims]";
        if (a.kind == halide_argument_kind_output_buffer) s << " (output, written in place)";
    }
    s << "): a Spyre kernel run on the simulated card; torch tensors in reverse Halide dimension order";
    return s.str();
}

}  // namespace spyre_torch
