// spyre_halide's kernel object: one compiled Spyre program (a <kernel>.spyre
// file the generator driver writes), run on the simulated card.
//
// The program's argument table says everything a call needs: the inputs and
// outputs in order, their dtypes, true shapes and device layouts, and the
// scalar parameters. run() checks the tensors against it (an error names the
// argument and what was expected), allocates outputs in the program's own
// layouts (so a following kernel that expects that layout reads them without
// a relayout) and calls spyre_run_program, the entry point generated kernels
// call. Tensors are DeviceTensors: nothing moves to or from the host here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "HalideBuffer.h"
#include "device_tensor.h"
#include "spyre/spyre_device.h"

namespace spyre_python {

struct KernelArgument {
    std::string name;
    bool is_output = false;
    at::ScalarType dtype = at::kFloat;
    std::vector<int64_t> shape;  // torch order (outermost first)
    spyre_device_layout layout{};
};

class ProgramKernel {
public:
    // Reads and decodes the program file; throws Error naming the file if it is not a valid program.
    explicit ProgramKernel(const std::string &path);

    const std::string &name() const { return name_; }
    const std::string &path() const { return path_; }
    const std::vector<KernelArgument> &inputs() const { return inputs_; }
    const std::vector<KernelArgument> &outputs() const { return outputs_; }
    const std::vector<std::string> &params() const { return params_; }

    // Runs the program. `outputs` (optional) are written in place; otherwise new
    // DeviceTensors in the program's layouts are returned.
    std::vector<DeviceTensor> run(const std::vector<DeviceTensor> &inputs, const std::vector<double> &params,
                                  const std::optional<std::vector<DeviceTensor>> &outputs) const;

private:
    void check_tensor(const KernelArgument &arg, const DeviceTensor &t, const char *role, size_t position) const;

    std::string path_;
    std::string name_;
    std::vector<uint8_t> bytes_;
    std::vector<KernelArgument> inputs_, outputs_;
    std::vector<bool> table_is_output_;  // the argument table's order of inputs and outputs
    std::vector<std::string> params_;
};

}  // namespace spyre_python
