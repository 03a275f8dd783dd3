// Finding the device region: the one loop split across the cores (a
// ForType::Parallel loop with a constant extent of at most the machine's core
// count). Everything inside it runs on the simulated device; everything
// outside stays host code.
#pragma once

#include "Halide.h"
#include "spyre/machine.h"

namespace spyre {
namespace compiler {

struct DeviceRegion {
    const Halide::Internal::For *loop = nullptr;  // the core loop
    int cores = 0;                                // its extent
};

// Throws CompileError when there is no such loop, more than one, or its extent is not a constant <= cores.
DeviceRegion find_device_region(const Halide::Internal::Stmt &s, const MachineDescription &m);

}  // namespace compiler
}  // namespace spyre
