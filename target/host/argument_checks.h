// Host-side checks for Spyre kernel arguments. Halide's own checks assume the
// padded shapes Spyre schedules see (spyre::constrain_tensor), host memory and
// no device copy; for a Spyre kernel the runtime checks instead (true extents,
// any strides, residency). This pass removes Halide's bounds, constraint,
// host-null and device-dirty assertions on the named buffers and keeps every
// other check (types, dimensions, sizes).
#pragma once

#include <set>
#include <string>

#include "Halide.h"

namespace spyre {
namespace compiler {

Halide::Internal::Stmt strip_spyre_argument_checks(const Halide::Internal::Stmt &s, const std::set<std::string> &buffers);

}  // namespace compiler
}  // namespace spyre
