// spyre_halide's kernel object (see program_kernel.h).
#include "program_kernel.h"

#include <sstream>

#include "spyre/program_format.h"
#include "spyre/spyre_runtime.h"

namespace spyre_python {

namespace {

at::ScalarType torch_dtype(spyre::DType t) {
    switch (t) {
    case spyre::DType::F16: return at::kHalf;
    case spyre::DType::F32: return at::kFloat;
    case spyre::DType::I8: return at::kChar;
    case spyre::DType::I32: return at::kInt;
    }
    return at::kFloat;
}

std::string shape_text(const std::vector<int64_t> &shape) {
    std::ostringstream s;
    s << "[";
    for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
    s << "]";
    return s.str();
}

}  // namespace

ProgramKernel::ProgramKernel(const std::string &path) : path_(path) {
    spyre::Program program;
    try {
        bytes_ = spyre::read_file_bytes(path);
        program = spyre::decode_program(bytes_);
    } catch (const std::exception &e) {
        throw Error("spyre_halide: " + path + " is not a Spyre program: " + e.what());
    }
    name_ = program.kernel_name;
    for (const spyre::ProgramArgument &a : program.args) {
        if (a.kind == spyre::ArgKind::Temp) continue;
        KernelArgument k;
        k.name = a.name;
        k.is_output = a.kind == spyre::ArgKind::Output;
        k.dtype = torch_dtype(a.shape.dtype);
        k.shape.assign(a.shape.extent.rbegin(), a.shape.extent.rend());
        k.layout.dimensions = (int32_t)a.layout.order.size();
        k.layout.stick_dim = a.layout.stick_dim;
        for (int d = 0; d < k.layout.dimensions && d < SPYRE_MAX_DIMENSIONS; ++d) {
            k.layout.order[d] = a.layout.order[d];
            k.layout.padded[d] = a.layout.padded[d];
        }
        table_is_output_.push_back(k.is_output);
        (k.is_output ? outputs_ : inputs_).push_back(k);
    }
    for (const spyre::ScalarParam &p : program.params) params_.push_back(p.name);
}

void ProgramKernel::check_tensor(const KernelArgument &arg, const DeviceTensor &t, const char *role,
                                 size_t position) const {
    if (t.dtype() == arg.dtype && t.shape() == arg.shape) return;
    throw Error(name_ + ": " + role + " " + std::to_string(position + 1) + " '" + arg.name + "' must be a " +
                dtype_name(arg.dtype) + " tensor of shape " + shape_text(arg.shape) + ", got a " +
                dtype_name(t.dtype()) + " tensor of shape " + shape_text(t.shape()));
}

std::vector<DeviceTensor> ProgramKernel::run(const std::vector<DeviceTensor> &inputs, const std::vector<double> &params,
                                             const std::optional<std::vector<DeviceTensor>> &outputs) const {
    if (inputs.size() != inputs_.size()) {
        throw Error(name_ + ": takes " + std::to_string(inputs_.size()) + " input tensors, got " +
                    std::to_string(inputs.size()));
    }
    if (params.size() != params_.size()) {
        throw Error(name_ + ": takes " + std::to_string(params_.size()) + " scalar parameters, got " +
                    std::to_string(params.size()));
    }
    for (size_t i = 0; i < inputs.size(); ++i) check_tensor(inputs_[i], inputs[i], "input", i);
    std::vector<DeviceTensor> results;
    if (outputs) {
        if (outputs->size() != outputs_.size()) {
            throw Error(name_ + ": writes " + std::to_string(outputs_.size()) + " output tensors, got " +
                        std::to_string(outputs->size()));
        }
        for (size_t i = 0; i < outputs->size(); ++i) check_tensor(outputs_[i], (*outputs)[i], "output", i);
        results = *outputs;
    } else {
        for (const KernelArgument &o : outputs_) results.push_back(DeviceTensor::empty(o.shape, o.dtype, o.layout));
    }

    std::vector<halide_buffer_t *> table;
    size_t next_input = 0, next_output = 0;
    for (bool is_output : table_is_output_) {
        table.push_back(is_output ? results[next_output++].raw() : inputs[next_input++].raw());
    }
    Halide::Runtime::Buffer<uint8_t> program(const_cast<uint8_t *>(bytes_.data()), (int)bytes_.size());
    int code;
    {
        pybind11::gil_scoped_release release;  // the simulator runs without the interpreter lock
        code = spyre_run_program(nullptr, program.raw_buffer(), (int32_t)table.size(), table.data(),
                                 (int32_t)params.size(), params.data());
    }
    check_runtime(code, name_);
    return results;
}

}  // namespace spyre_python
