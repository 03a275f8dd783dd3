// The stick width of an element type on the active context's machine (see tensor_constraints.h).
#include "tensor_constraints.h"

namespace spyre {

int stick_lanes(const Halide::Type &t) {
    return (int)(scheduling_machine().stick_bytes / t.bytes());
}

}  // namespace spyre
