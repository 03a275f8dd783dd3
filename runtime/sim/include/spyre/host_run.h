// Running a program on dense host tensors: allocates device memory for every
// argument, packs inputs into their device layouts, simulates, and unpacks the
// outputs. Used by spyre-run, the demos and the tests; the Halide-facing
// runtime does the same through halide_buffer_t.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spyre/device_memory.h"
#include "spyre/layout.h"
#include "spyre/simulator.h"

namespace spyre {

// A dense tensor in host memory, dimension 0 innermost (Halide order).
struct HostTensor {
    std::string name;
    TensorShape shape;
    std::vector<uint8_t> data;

    int64_t elements() const;
    HostView view();
    static HostTensor zeros(const std::string &name, const TensorShape &shape);
};

struct HostRunResult {
    SimulationResult sim;
    std::vector<HostTensor> outputs;  // in argument order; empty after a timing-only run
};

// `inputs` must hold one tensor per input argument, matched by name; shapes
// and dtypes must agree with the program (checked, Error otherwise). A
// timing-only run (options.functional false) reads no inputs and allocates no
// memory for the tensors, host or device: `inputs` may be empty.
HostRunResult run_on_host_tensors(const Program &p, const MachineDescription &m, DeviceMemory &memory,
                                  const std::vector<HostTensor> &inputs, const std::vector<double> &params,
                                  const SimulationOptions &options = {});

// Fills a tensor with seeded random values: floats uniform in [-1, 1), ints in [-8, 8).
void fill_random(HostTensor &t, uint64_t seed);

}  // namespace spyre
