// The limit every generator's shape parameters are checked against, where the
// generator reads them (configure()), before any planner or Halide sees them.
//
// Halide 14 buffers (without the large_buffers target feature) index with
// 32-bit integers: a tensor holds at most 2^31 - 1 elements, counted with the
// padding its Spyre layout adds (dimension 0 to whole sticks). A bigger shape
// used to compile with rc 0 and Halide's "guaranteed to fail an assertion at
// runtime" warning, or to stop in a planner with overflowed tiles; it is now
// one error naming the parameters and the limit:
//   softmax: rows=100000000 is too large: tensor 'in' (cols x rows = 1024 x 100000000)
//   would hold 102400000000 elements, more than the 2147483647 (2^31 - 1) a Halide 14 buffer can index
#pragma once

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "Halide.h"
#include "spyre_target.h"
#include "tensor_constraints.h"

namespace spyre {

constexpr int64_t kMaxTensorElements = 2147483647;  // 2^31 - 1

// One dimension of a tensor: the GeneratorParam that sets it (empty for a fixed
// extent, e.g. a broadcast 1) and its value.
struct ShapeDim {
    std::string param;
    int64_t extent;
};

// Fails with a Halide user error (the driver prints "gen_x: error: ..." and
// exits 1) if `tensor`, of element type `t` and dimensions `dims` (innermost
// first), would hold more than kMaxTensorElements elements.
inline void check_tensor_fits(const std::string &kernel, const std::string &tensor, const std::vector<ShapeDim> &dims,
                              const Halide::Type &t) {
    // In long double: the product of int32 extents can pass 2^63.
    long double elements = 1;
    bool padded = false;
    for (size_t d = 0; d < dims.size(); d++) {
        int64_t e = dims[d].extent;
        if (d == 0 && is_spyre()) {
            const int64_t lanes = stick_lanes(t);
            e = (e + lanes - 1) / lanes * lanes;
            padded = e != dims[d].extent;
        }
        elements *= (long double)e;
    }
    if (elements <= (long double)kMaxTensorElements) return;
    // Name the largest parameter first, then the whole shape.
    size_t largest = 0;
    for (size_t d = 1; d < dims.size(); d++) {
        if (dims[d].extent > dims[largest].extent) largest = d;
    }
    std::ostringstream names, values;
    for (size_t d = 0; d < dims.size(); d++) {
        names << (d ? " x " : "") << (dims[d].param.empty() ? std::to_string(dims[d].extent) : dims[d].param);
        values << (d ? " x " : "") << dims[d].extent;
    }
    std::ostringstream count;
    count.precision(0);
    count << std::fixed << elements;
    const std::string big = dims[largest].param.empty()
                                ? std::to_string(dims[largest].extent)
                                : dims[largest].param + "=" + std::to_string(dims[largest].extent);
    _halide_user_assert(false) << kernel << ": " << big << " is too large: tensor '" << tensor << "' (" << names.str()
                               << " = " << values.str() << ") would hold " << count.str() << " elements"
                               << (padded ? " (dimension 0 padded to whole sticks)" : "") << ", more than the "
                               << kMaxTensorElements << " (2^31 - 1) a Halide 14 buffer can index";
}

}  // namespace spyre
