// A device crop of a 2-D Spyre tensor with its mins at 0, as kernels take their
// arguments (Halide's Buffer::translate would drop the device handle), for the
// tests of crops as kernel arguments. Assumes the parent is a live Spyre device buffer.
#pragma once

#include "HalideRuntime.h"
#include "spyre/spyre_device.h"

namespace spyre::testing {

struct DeviceCropAtMinZero {
    halide_buffer_t buf{};
    halide_dimension_t dims[2]{};

    // Dim `d` of `parent` cropped to [min, min + extent) on the device; returns device_crop's result.
    int make(const halide_buffer_t *parent, int d, int min, int extent) {
        buf = *parent;
        dims[0] = parent->dim[0];
        dims[1] = parent->dim[1];
        dims[d].min = min;
        dims[d].extent = extent;
        buf.dim = dims;
        buf.device = 0;
        buf.device_interface = nullptr;
        buf.host = nullptr;
        const int r = spyre_device_interface()->device_crop(nullptr, parent, &buf);
        dims[d].min = 0;
        return r;
    }
    int release() { return spyre_device_interface()->device_release_crop(nullptr, &buf); }
};

}  // namespace spyre::testing
