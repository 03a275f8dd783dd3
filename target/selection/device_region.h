// Finding the device region: the one loop split across the cores (a
// ForType::Parallel loop with a constant extent of at most the machine's core
// count). Everything inside it runs on the simulated device; everything
// outside stays host code.
#pragma once

#include <string>
#include <vector>

#include "Halide.h"
#include "spyre/machine.h"

namespace spyre {
namespace compiler {

struct DeviceRegion {
    const Halide::Internal::IRNode *node = nullptr;  // the statement the runtime call replaces
    Halide::Internal::Stmt body;                     // what each core runs
    std::string core_var;                            // the core loop's variable ("" for one core)
    int cores = 0;
    // A distributed region: the core loop produces a scratchpad buffer allocated outside it (each core
    // its part) and the output is produced after the loop. `body` is then the outermost scratchpad
    // Allocate around both; each core runs the loop's body for its index, and core 0 alone runs what
    // follows the loop, after every core's part has been gathered into it over the ring.
    bool distributed = false;
};

// Throws CompileError when there is more than one parallel loop, or its extent
// is not a constant <= cores. When the core split has a single iteration Halide
// removes the loop; the region is then the production of `outputs` on one core.
DeviceRegion find_device_region(const Halide::Internal::Stmt &s, const MachineDescription &m,
                                const std::vector<std::string> &outputs);

}  // namespace compiler
}  // namespace spyre
