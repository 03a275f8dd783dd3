// Stick-tiled device layouts and host <-> device conversion (see layout.h).
#include "spyre/layout.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "spyre/error.h"

namespace spyre {

DeviceLayout default_layout(const TensorShape &shape, int64_t stick_bytes, int stick_dim) {
    const int rank = (int)shape.extent.size();
    if (rank > 0 && (stick_dim < 0 || stick_dim >= rank)) {
        throw Error("default_layout: stick dimension " + std::to_string(stick_dim) + " is out of range for rank " +
                    std::to_string(rank));
    }
    DeviceLayout l;
    l.stick_dim = stick_dim;
    for (int d = rank - 1; d >= 0; d--) l.order.push_back(d);
    l.padded = shape.extent;
    if (rank > 0) {
        int64_t lanes = stick_bytes / dtype_bytes(shape.dtype);
        l.padded[stick_dim] = (shape.extent[stick_dim] + lanes - 1) / lanes * lanes;
    }
    return l;
}

void check_layout(const TensorShape &shape, const DeviceLayout &layout, int64_t stick_bytes, const std::string &what) {
    const int rank = (int)shape.extent.size();
    auto fail = [&](const std::string &msg) { throw Error(what + ": invalid device layout " + layout_to_string(layout) + ": " + msg); };
    if (rank < 1 || rank > 8) fail("rank must be in [1, 8], got " + std::to_string(rank));
    if (layout.stick_dim < 0 || layout.stick_dim >= rank) fail("stick dimension out of range");
    if ((int)layout.order.size() != rank || (int)layout.padded.size() != rank) fail("order and padding need one entry per dimension");
    std::vector<bool> seen(rank, false);
    for (int d : layout.order) {
        if (d < 0 || d >= rank || seen[d]) fail("order is not a permutation of the dimensions");
        seen[d] = true;
    }
    const int64_t lanes = stick_bytes / dtype_bytes(shape.dtype);
    int64_t total = stick_bytes;
    for (int d = 0; d < rank; d++) {
        if (shape.extent[d] < 1) fail("extent of dimension " + std::to_string(d) + " must be >= 1");
        if (layout.padded[d] < shape.extent[d]) fail("padded extent of dimension " + std::to_string(d) + " is below its extent");
        if (d == layout.stick_dim && layout.padded[d] % lanes != 0) fail("padded stick dimension must be a whole number of sticks");
        int64_t outer = d == layout.stick_dim ? layout.padded[d] / lanes : layout.padded[d];
        if (outer > (int64_t(1) << 40) / std::max<int64_t>(total, 1)) fail("tensor too large");
        total *= outer;
    }
}

LayoutAddressing layout_addressing(const TensorShape &shape, const DeviceLayout &layout, int64_t stick_bytes) {
    const int rank = (int)shape.extent.size();
    LayoutAddressing a;
    a.element_bytes = dtype_bytes(shape.dtype);
    a.lanes = stick_bytes / a.element_bytes;
    a.outer_extent.resize(rank);
    a.stride_bytes.resize(rank);
    for (int d = 0; d < rank; d++) {
        a.outer_extent[d] = d == layout.stick_dim ? layout.padded[d] / a.lanes : layout.padded[d];
    }
    int64_t stride = stick_bytes;
    for (int i = rank - 1; i >= 0; i--) {
        int d = layout.order[i];
        a.stride_bytes[d] = stride;
        stride *= a.outer_extent[d];
    }
    a.total_bytes = stride;
    return a;
}

int64_t device_offset(const LayoutAddressing &a, const DeviceLayout &layout, const int64_t *x) {
    int64_t off = 0;
    for (size_t d = 0; d < a.stride_bytes.size(); d++) {
        if ((int)d == layout.stick_dim) {
            off += (x[d] / a.lanes) * a.stride_bytes[d] + (x[d] % a.lanes) * a.element_bytes;
        } else {
            off += x[d] * a.stride_bytes[d];
        }
    }
    return off;
}

namespace {

// Calls fn(device_row_offset, host_row_pointer) for every combination of the
// non-stick coordinates; the row is the run of elements along the stick dimension.
template <typename Fn>
void for_each_stick_row(const TensorShape &shape, const DeviceLayout &layout, const LayoutAddressing &a,
                        const HostView &host, Fn fn) {
    const int rank = (int)shape.extent.size();
    std::vector<int64_t> x(rank, 0);
    const int s = layout.stick_dim;
    while (true) {
        int64_t dev = 0;
        int64_t host_off = 0;
        for (int d = 0; d < rank; d++) {
            if (d == s) continue;
            dev += x[d] * a.stride_bytes[d];
            host_off += x[d] * host.stride_elems[d];
        }
        fn(dev, static_cast<uint8_t *>(host.base) + host_off * a.element_bytes);
        int d = 0;
        for (; d < rank; d++) {
            if (d == s) continue;
            if (++x[d] < shape.extent[d]) break;
            x[d] = 0;
        }
        if (d == rank) break;
    }
}

void check_host_view(const TensorShape &shape, const HostView &host) {
    if (host.base == nullptr) throw Error("host buffer has no host memory (null pointer)");
    if (host.extent.size() != shape.extent.size() || host.stride_elems.size() != shape.extent.size()) {
        throw Error("host buffer has " + std::to_string(host.extent.size()) + " dimensions, the tensor has " +
                    std::to_string(shape.extent.size()));
    }
    for (size_t d = 0; d < shape.extent.size(); d++) {
        if (host.extent[d] != shape.extent[d]) {
            throw Error("host buffer extent of dimension " + std::to_string(d) + " is " + std::to_string(host.extent[d]) +
                        ", the tensor's is " + std::to_string(shape.extent[d]));
        }
    }
}

}  // namespace

void pack_to_device(const TensorShape &shape, const DeviceLayout &layout, int64_t stick_bytes, const HostView &host,
                    uint8_t *device) {
    check_layout(shape, layout, stick_bytes, "pack_to_device");
    check_host_view(shape, host);
    const LayoutAddressing a = layout_addressing(shape, layout, stick_bytes);
    std::memset(device, 0, a.total_bytes);
    const int s = layout.stick_dim;
    const int64_t n = shape.extent[s];
    const int64_t hs = host.stride_elems[s];
    const int64_t eb = a.element_bytes;
    const int64_t ss = a.stride_bytes[s];
    for_each_stick_row(shape, layout, a, host, [&](int64_t dev, const uint8_t *h) {
        if (hs == 1) {
            for (int64_t st = 0; st * a.lanes < n; st++) {
                int64_t cnt = std::min(a.lanes, n - st * a.lanes);
                std::memcpy(device + dev + st * ss, h + st * a.lanes * eb, cnt * eb);
            }
        } else {
            for (int64_t i = 0; i < n; i++) {
                std::memcpy(device + dev + (i / a.lanes) * ss + (i % a.lanes) * eb, h + i * hs * eb, eb);
            }
        }
    });
}

void unpack_from_device(const TensorShape &shape, const DeviceLayout &layout, int64_t stick_bytes, const uint8_t *device,
                        const HostView &host) {
    check_layout(shape, layout, stick_bytes, "unpack_from_device");
    check_host_view(shape, host);
    const LayoutAddressing a = layout_addressing(shape, layout, stick_bytes);
    const int s = layout.stick_dim;
    const int64_t n = shape.extent[s];
    const int64_t hs = host.stride_elems[s];
    const int64_t eb = a.element_bytes;
    const int64_t ss = a.stride_bytes[s];
    for_each_stick_row(shape, layout, a, host, [&](int64_t dev, const uint8_t *hc) {
        uint8_t *h = const_cast<uint8_t *>(hc);
        if (hs == 1) {
            for (int64_t st = 0; st * a.lanes < n; st++) {
                int64_t cnt = std::min(a.lanes, n - st * a.lanes);
                std::memcpy(h + st * a.lanes * eb, device + dev + st * ss, cnt * eb);
            }
        } else {
            for (int64_t i = 0; i < n; i++) {
                std::memcpy(h + i * hs * eb, device + dev + (i / a.lanes) * ss + (i % a.lanes) * eb, eb);
            }
        }
    });
}

std::string layout_to_string(const DeviceLayout &layout) {
    std::ostringstream os;
    os << "stick=" << layout.stick_dim << " order=[";
    for (size_t i = 0; i < layout.order.size(); i++) os << (i ? "," : "") << layout.order[i];
    os << "] padded=[";
    for (size_t i = 0; i < layout.padded.size(); i++) os << (i ? "," : "") << layout.padded[i];
    os << "]";
    return os.str();
}

}  // namespace spyre
