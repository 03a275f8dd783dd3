// Static shapes for kernel arguments, and the padding Spyre tensors carry.
//
// constrain_tensor(buf, extents, multiples, stick_dim) declares a dense tensor
// with the given extents (innermost first). For host builds that is all it
// does. For Spyre builds every dimension is padded up to its multiple (the
// stick dimension, dimension 0 unless `stick_dim` names another, at least to
// whole sticks) and the padded extents and
// dense padded strides are what Halide sees: device tensors hold that padding
// (zeros on upload), so schedules may read and write whole tiles and whole
// sticks without ever leaving the tensor. The true extents are recorded in the active
// ScheduleContext for the Spyre lowering pass, which puts them in the program's argument table; the
// runtime checks user buffers against the true extents and moves only them.
// The same padded extents are set as estimates (what auto_schedule=true needs).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "Halide.h"
#include "schedule_context.h"
#include "spyre_target.h"

namespace spyre {

// Lanes of one stick for an element type (the active context's machine: stick_bytes / element bytes).
int stick_lanes(const Halide::Type &t);

// T is any Halide buffer-like object with name(), type() and dim(i): Input/Output<Buffer<>> in
// generators, ImageParam and Func::output_buffer() in JIT pipelines.
template <typename T>
void constrain_tensor(T &buf, const std::vector<int> &extents, std::vector<int> multiples = {}, int stick_dim = 0) {
    multiples.resize(extents.size(), 1);
    SpyreTensorInfo info;
    info.stick_dim = std::clamp(stick_dim, 0, std::max(0, (int)extents.size() - 1));
    // The IR names an input by its parameter and an output by its Func, which
    // Halide makes unique per process (C, C$2, ...) when a generator runs twice.
    if constexpr (std::is_base_of_v<Halide::Internal::GeneratorOutputBase, T>) {
        info.name = Halide::Func(buf).name();
        info.argument_name = buf.name();  // the Output's own name, as in the AOT signature
        info.is_output = true;
    } else if constexpr (std::is_same_v<T, Halide::OutputImageParam>) {
        info.name = buf.name();  // a Func's output_buffer(): named like the Func
        info.is_output = true;
    } else {
        info.name = buf.name();
    }
    info.type = buf.type();
    info.extents = extents;
    info.shape_name = info.name;
    if (!extents.empty()) {
        const Halide::Expr e = buf.dim(0).extent();
        if (const auto *v = e.template as<Halide::Internal::Variable>()) {
            const size_t at = v->name.rfind(".extent.");
            if (at != std::string::npos) info.shape_name = v->name.substr(0, at);
        }
    }
    // In 64 bits: the stride past the last dimension (never set) can pass 2^31; a stride that
    // is set and would not fit is left alone, since add_tensor below refuses such a tensor.
    int64_t stride = 1;
    for (size_t d = 0; d < extents.size(); d++) {
        int mult = std::max(1, multiples[d]);
        if (is_spyre() && (int)d == info.stick_dim) mult = std::lcm(mult, stick_lanes(info.type));
        const int padded = padded_extent(extents[d], mult);
        info.padded.push_back(padded);
        // The estimate is the static shape too: the stock autoschedulers (auto_schedule=true) require one.
        buf.dim((int)d).set_bounds(0, padded).set_estimate(0, padded);
        if (stride <= INT32_MAX) {
            buf.dim((int)d).set_stride((int)stride);
            stride *= padded;  // both factors below 2^31: no overflow
        }
    }
    if constexpr (std::is_base_of_v<Halide::Internal::GeneratorOutputBase, T>) {
        // An output's estimates belong to its Func, which is what the autoschedulers read.
        Halide::Region region;
        for (int p : info.padded) region.emplace_back(0, p);
        buf.set_estimates(region);
    }
    ScheduleContext::active().add_tensor(info);
}

}  // namespace spyre
