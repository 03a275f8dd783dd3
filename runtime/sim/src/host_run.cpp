// Running programs on dense host tensors (see host_run.h).
#include "spyre/host_run.h"

#include <cstring>
#include <random>

#include "spyre/error.h"

namespace spyre {

int64_t HostTensor::elements() const {
    int64_t n = 1;
    for (int64_t e : shape.extent) n *= e;
    return n;
}

HostView HostTensor::view() {
    HostView v;
    v.base = data.data();
    v.extent = shape.extent;
    int64_t stride = 1;
    for (int64_t e : shape.extent) {
        v.stride_elems.push_back(stride);
        stride *= e;
    }
    return v;
}

HostTensor HostTensor::zeros(const std::string &name, const TensorShape &shape) {
    HostTensor t;
    t.name = name;
    t.shape = shape;
    t.data.assign(t.elements() * dtype_bytes(shape.dtype), 0);
    return t;
}

void fill_random(HostTensor &t, uint64_t seed) {
    std::mt19937_64 rng(seed);
    const int64_t n = t.elements();
    std::uniform_real_distribution<float> uf(-1.0f, 1.0f);
    std::uniform_int_distribution<int> ui(-8, 7);
    for (int64_t i = 0; i < n; i++) {
        switch (t.shape.dtype) {
        case DType::F32: {
            float v = uf(rng);
            std::memcpy(&t.data[i * 4], &v, 4);
            break;
        }
        case DType::F16: {
            uint16_t h = float_to_half(uf(rng));
            std::memcpy(&t.data[i * 2], &h, 2);
            break;
        }
        case DType::I32: {
            int32_t v = ui(rng);
            std::memcpy(&t.data[i * 4], &v, 4);
            break;
        }
        case DType::I8: t.data[i] = (uint8_t)(int8_t)ui(rng); break;
        }
    }
}

HostRunResult run_on_host_tensors(const Program &p, const MachineDescription &m, DeviceMemory &memory,
                                  const std::vector<HostTensor> &inputs, const std::vector<double> &params,
                                  const SimulationOptions &options) {
    std::vector<uint64_t> handles;
    std::vector<ArgumentBinding> bindings;
    HostRunResult out;
    try {
        for (const ProgramArgument &a : p.args) {
            const LayoutAddressing addr = layout_addressing(a.shape, a.layout, m.stick_bytes);
            ArgumentBinding b;
            b.bytes = addr.total_bytes;
            if (options.functional) {
                uint64_t h = memory.allocate(addr.total_bytes, a.name);
                handles.push_back(h);
                b.data = memory.data(h);
            }
            if (a.kind == ArgKind::Input && options.functional) {
                const HostTensor *in = nullptr;
                for (const auto &t : inputs) {
                    if (t.name == a.name) in = &t;
                }
                if (!in) throw Error("no host tensor given for input '" + a.name + "'");
                if (in->shape.dtype != a.shape.dtype || in->shape.extent != a.shape.extent) {
                    throw Error("host tensor '" + a.name + "' has a different dtype or shape than the program expects");
                }
                HostTensor copy = *in;
                pack_to_device(a.shape, a.layout, m.stick_bytes, copy.view(), b.data);
            }
            bindings.push_back(b);
        }
        out.sim = simulate_program(p, m, bindings, params, options);
        for (size_t i = 0; i < p.args.size() && options.functional; i++) {
            const ProgramArgument &a = p.args[i];
            if (a.kind != ArgKind::Output) continue;
            HostTensor t = HostTensor::zeros(a.name, a.shape);
            unpack_from_device(a.shape, a.layout, m.stick_bytes, bindings[i].data, t.view());
            out.outputs.push_back(std::move(t));
        }
    } catch (...) {
        for (uint64_t h : handles) memory.free(h);
        throw;
    }
    for (uint64_t h : handles) memory.free(h);
    return out;
}

}  // namespace spyre
