// Tensors and the non-kernel operations of the model chain on the device and
// on the host (device_tensors.h).
#include "device_tensors.h"

#include <cstring>
#include <stdexcept>

#include "spyre/dtype.h"
#include "spyre/spyre_device.h"
#include "spyre/spyre_runtime.h"

namespace llm {

const halide_type_t kF16{halide_type_float, 16, 1};

Realization::Realization(bool on_device, bool timing_only) : on_device_(on_device), timing_only_(timing_only) {
    if (timing_only && !on_device) throw std::logic_error("the host reference has no timing-only mode");
}

void Realization::check(int rc, const std::string &what) const {
    if (rc == 0) return;
    std::string message = std::string(name()) + ": " + what + " failed with " + std::to_string(rc);
    if (on_device_) message += std::string(": ") + spyre_last_error();
    throw std::runtime_error(message);
}

Tensor Realization::make(const std::vector<int> &extents, bool host_memory, halide_type_t type) const {
    if (!on_device_) {
        Tensor t(type, extents);
        std::memset(t.data(), 0, t.size_in_bytes());
        return t;
    }
    Tensor t = host_memory && !timing_only_ ? Tensor(type, extents) : Tensor(type, nullptr, extents);
    check(t.device_malloc(spyre_device_interface()), "device_malloc");
    return t;
}

Tensor Realization::make_from_host(const Tensor &host) const {
    std::vector<int> extents;
    for (int d = 0; d < host.dimensions(); d++) extents.push_back(host.dim(d).extent());
    if (!on_device_) {
        Tensor t(kF16, extents);
        t.copy_from(host);
        return t;
    }
    if (timing_only_) return make(extents);
    Tensor t = host.copy();
    t.set_host_dirty();
    check(t.copy_to_device(spyre_device_interface()), "upload");
    return t;
}

namespace {

// Element pointer of coordinates x (counted from the buffer's mins).
uint16_t *element(const halide_buffer_t *b, const int *x) {
    int64_t offset = 0;
    for (int d = 0; d < b->dimensions; d++) offset += (int64_t)x[d] * b->dim[d].stride;
    return reinterpret_cast<uint16_t *>(b->host) + offset;
}

void host_copy(const halide_buffer_t *src, const halide_buffer_t *dst) {
    const int rank = dst->dimensions;
    if (src->dimensions != rank) throw std::runtime_error("host copy: ranks differ");
    for (int d = 0; d < rank; d++) {
        if (src->dim[d].extent != dst->dim[d].extent) throw std::runtime_error("host copy: extents differ");
        if (dst->dim[d].extent == 0) return;
    }
    std::vector<int> x(rank, 0);
    while (true) {
        // The innermost dimension as one loop.
        uint16_t *out = element(dst, x.data());
        const uint16_t *in = element(src, x.data());
        const int n = dst->dim[0].extent, so = src->dim[0].stride, d0 = dst->dim[0].stride;
        for (int i = 0; i < n; i++) out[(int64_t)i * d0] = in[(int64_t)i * so];
        int d = 1;
        for (; d < rank; d++) {
            if (++x[d] < dst->dim[d].extent) break;
            x[d] = 0;
        }
        if (d == rank) return;
    }
}

}  // namespace

void Realization::copy(const Tensor &src, Tensor dst) const {
    if (on_device_) {
        check(spyre_device_copy(nullptr, src.raw_buffer(), dst.raw_buffer()), "device copy");
        return;
    }
    host_copy(src.raw_buffer(), dst.raw_buffer());
}

Tensor Realization::reshape(Tensor &t, const std::vector<int> &extents) const {
    if (!on_device_) {
        // A new dense buffer holding the same elements in the same order (the
        // host chain only takes views of tensors already written).
        int64_t n = 1;
        for (int e : extents) n *= e;
        if (n != (int64_t)t.number_of_elements()) throw std::runtime_error("host reshape: the element counts differ");
        std::vector<int> own;
        for (int d = 0; d < t.dimensions(); d++) own.push_back(t.dim(d).extent());
        Tensor dense(kF16, own);
        host_copy(t.raw_buffer(), dense.raw_buffer());
        Tensor v(kF16, extents);
        std::memcpy(v.data(), dense.data(), dense.size_in_bytes());
        return v;
    }
    Tensor view(kF16, nullptr, extents);
    check(spyre_device_reshape(nullptr, t.raw_buffer(), view.raw_buffer()), "reshape view");
    return view;
}

void Realization::to_host(Tensor &t) const {
    if (!on_device_) return;
    if (timing_only_) throw std::logic_error("to_host in timing-only mode: no tensor holds values");
    if (!t.data()) throw std::logic_error("to_host of a device tensor made without host memory");
    check(t.copy_to_host(), "copy to host");
}

float f16_at(const Tensor &t, const std::vector<int> &coords) {
    const halide_buffer_t *b = t.raw_buffer();
    int64_t offset = 0;
    for (int d = 0; d < b->dimensions; d++) offset += (int64_t)(coords[d] - b->dim[d].min) * b->dim[d].stride;
    return spyre::half_to_float(reinterpret_cast<const uint16_t *>(b->host)[offset]);
}

void fill_uniform_f16(Tensor &t, uint64_t seed, float center, float half_width) {
    // splitmix64: fast enough for the ~8e9 weights of a full-width model, and reproducible.
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    uint16_t *p = static_cast<uint16_t *>(t.data());
    const size_t n = t.number_of_elements();
    for (size_t i = 0; i < n; i++) {
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        const float u = (float)(z >> 40) * (1.0f / 16777216.0f);  // [0, 1)
        p[i] = spyre::float_to_half(center + half_width * (2.0f * u - 1.0f));
    }
}

}  // namespace llm
