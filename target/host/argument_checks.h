// Host-side checks for Spyre kernel arguments. Halide's own checks assume the
// padded shapes Spyre schedules see (spyre::constrain_tensor), host memory and
// no device copy; for a Spyre kernel the runtime checks instead (true extents,
// any strides, residency). This pass removes Halide's bounds, constraint,
// host-null and device-dirty assertions on the named buffers and keeps every
// other check (types, dimensions, sizes).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "Halide.h"

namespace spyre {
namespace compiler {

Halide::Internal::Stmt strip_spyre_argument_checks(const Halide::Internal::Stmt &s, const std::set<std::string> &buffers);

// Before the checks are stripped: a Spyre kernel's shapes are static, so Halide's bounds check
// of an input (the region the algorithm reads of it, halide_error_access_out_of_bounds) is
// decided here where that region is a constant. A read past the tensor's padded extents in
// any dimension would be out of bounds on every call: a CompileError naming the tensor, the
// dimension, the elements read and the extent (`padded`: the IR's buffer name -> the padded
// extents, innermost first; `true_extents` for the message).
void check_static_input_reads(const Halide::Internal::Stmt &s,
                              const std::map<std::string, std::vector<int64_t>> &padded,
                              const std::map<std::string, std::vector<int64_t>> &true_extents);

}  // namespace compiler
}  // namespace spyre
