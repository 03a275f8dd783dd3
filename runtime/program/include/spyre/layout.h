// Device tensor layouts: the ONE definition of how a tensor is stick-tiled in
// device DRAM, and conversion between strided host buffers and that layout.
//
// A tensor has host dimensions 0..rank-1 (innermost first, as in Halide).
// Its layout names a stick dimension s and an order of all dimensions from
// outermost to innermost. Along s, elements are grouped into sticks of
// stick_bytes / element_bytes lanes; every dimension d has a padded extent
// padded[d] >= extent[d] (padded[s] a whole number of sticks). The device
// bytes are a row-major array over `order` of (d == s ? stick index : index),
// each entry one stick, the lane inside the stick innermost. Padding is zero.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spyre/dtype.h"

namespace spyre {

struct DeviceLayout {
    int stick_dim = 0;
    std::vector<int> order;        // outermost first; a permutation of 0..rank-1
    std::vector<int64_t> padded;   // per host dimension

    bool operator==(const DeviceLayout &o) const {
        return stick_dim == o.stick_dim && order == o.order && padded == o.padded;
    }
};

struct TensorShape {
    DType dtype = DType::F32;
    std::vector<int64_t> extent;  // per host dimension, innermost first
};

// The default layout: stick along dimension 0, dimensions ordered as on the
// host (outermost = last), padding only the stick dimension to whole sticks.
DeviceLayout default_layout(const TensorShape &shape, int64_t stick_bytes, int stick_dim = 0);

// Throws spyre::Error (with `what` in the message) unless the layout fits the shape.
void check_layout(const TensorShape &shape, const DeviceLayout &layout, int64_t stick_bytes, const std::string &what);

// Derived addressing of a (checked) layout.
struct LayoutAddressing {
    int64_t lanes = 0;                   // elements per stick
    int64_t element_bytes = 0;
    int64_t total_bytes = 0;             // device allocation size
    std::vector<int64_t> outer_extent;   // per host dim: sticks along s, padded extent otherwise
    std::vector<int64_t> stride_bytes;   // per host dim: device byte stride of one step of the
                                         // outer index (one stick along s)
};
LayoutAddressing layout_addressing(const TensorShape &shape, const DeviceLayout &layout, int64_t stick_bytes);

// Byte offset in the device allocation of the element at host coordinates x.
int64_t device_offset(const LayoutAddressing &a, const DeviceLayout &layout, const int64_t *x);

// A strided view of host memory: the element at coordinates x is at
// base + sum(x[d] * stride_elems[d]) * element_bytes. Strides may be any sign.
struct HostView {
    void *base = nullptr;
    std::vector<int64_t> extent;
    std::vector<int64_t> stride_elems;
};

// host -> device: writes the whole device image (padding zeroed).
void pack_to_device(const TensorShape &shape, const DeviceLayout &layout, int64_t stick_bytes,
                    const HostView &host, uint8_t *device);
// device -> host: writes every element of the host view (padding ignored).
void unpack_from_device(const TensorShape &shape, const DeviceLayout &layout, int64_t stick_bytes,
                        const uint8_t *device, const HostView &host);

std::string layout_to_string(const DeviceLayout &layout);

}  // namespace spyre
