// Before Halide lowers a Spyre pipeline: the algorithm sees the shapes the host build sees.
//
// A Spyre build constrains each tensor to its padded extents (whole sticks, whole tiles) and
// dense padded strides, and Halide's buffer-shape variables (`in.extent.0`, `in.min.1`,
// `in.stride.2`, what `in.width()` or `in.dim(d).extent()` return) would resolve to those.
// An algorithm that reads them (`RDom r(0, in.width())`, BoundaryConditions::repeat_edge(in)
// without bounds, a filter's `dim(0).extent()`) would then compute another function than its
// host build. Padding is the layout's business, not the algorithm's.
//
// Expects: the pipeline's Funcs are defined (the generator's generate() has run) and every
//          tensor in `tensors` was constrained with spyre::constrain_tensor.
// Guarantees: in every definition of every Func the outputs reach (values, arguments,
//          predicates, reduction domains and the stage schedules' RVar bounds), each read of
//          a constrained tensor's extent, min or stride is replaced by the constant the host
//          build has: the true extent, 0, the dense stride of the true extents. The buffers'
//          own constraints (padded bounds and strides) are unchanged, so schedules still read
//          and write whole sticks. Idempotent.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "Halide.h"
#include "tensor_constraints.h"

namespace spyre {
namespace compiler {

// Returns how many shape reads were replaced (for SPYRE_DEBUG).
int use_true_tensor_shapes(const std::vector<Halide::Internal::Function> &outputs,
                           const std::map<std::string, SpyreTensorInfo> &tensors);

}  // namespace compiler
}  // namespace spyre
