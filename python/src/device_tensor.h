// spyre_halide.DeviceTensor: a tensor whose data lives in the simulated
// Spyre card's memory, for Python.
//
// A DeviceTensor is a Halide::Runtime::Buffer<void> with a Spyre device
// allocation and no host memory (docs/runtime.md, "Device residency"): kernel
// calls read and write it in place, and data moves between the host and the
// card only in from_torch() and to_torch(), charged in the profile as
// host-link time. Views (transpose, narrow, select, reshape, unsqueeze) share
// the allocation as the C API's views do; copy_() is spyre_device_copy.
//
// Dimension order: the Python side speaks torch's order (outermost first);
// the Halide buffer has the reverse order (dimension 0 innermost). Supported
// element types: float16, float32, int8, int32 (the device's dtypes).
// Every failure is a spyre_halide.Error (a Python exception) naming what was
// wrong; nothing here aborts.
#pragma once

#include <torch/extension.h>

#include <optional>
#include <string>
#include <vector>

#include "HalideBuffer.h"
#include "spyre/spyre_device.h"
#include "spyre_halide/torch_op.h"

namespace spyre_python {

// Thrown for every misuse or runtime failure; becomes spyre_halide.Error.
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

using spyre_torch::dtype_name;  // torch's Python name of a dtype ("float16", ...)
// The Halide type of a torch dtype the device supports (throws Error naming it otherwise).
halide_type_t halide_type_of_dtype(at::ScalarType dtype, const std::string &what);
at::ScalarType dtype_of_halide_type(halide_type_t type);

class DeviceTensor {
public:
    // A copy of a contiguous CPU tensor on the card, in `layout` (the default
    // layout when none: sticks along the innermost dimension).
    static DeviceTensor from_torch(const at::Tensor &tensor, const std::optional<spyre_device_layout> &layout);
    // An uninitialized tensor on the card (it holds no values until written).
    static DeviceTensor empty(const std::vector<int64_t> &shape, at::ScalarType dtype,
                              const std::optional<spyre_device_layout> &layout);

    // The values, as a new contiguous CPU tensor.
    at::Tensor to_torch() const;

    std::vector<int64_t> shape() const;  // torch order
    at::ScalarType dtype() const;
    int dim() const { return buffer_.dimensions(); }
    int64_t numel() const;
    // The layout of the allocation (Halide dimension order, as spyre_device_layout).
    spyre_device_layout layout() const;
    bool is_view() const { return is_view_; }

    // Views (same allocation, no data moved). Dimensions in torch order; negative counts from the end.
    DeviceTensor transpose(int dim0, int dim1) const;
    DeviceTensor narrow(int dim, int64_t start, int64_t length) const;
    DeviceTensor select(int dim, int64_t index) const;
    DeviceTensor reshape(const std::vector<int64_t> &shape) const;  // spyre_device_reshape's rule

    // A new tensor with the same values in the default layout, or in `layout`
    // (spyre_device_copy: a DMA on the card).
    DeviceTensor clone(const std::optional<spyre_device_layout> &layout) const;
    // Copies src's values into this tensor (same dtype and shape; spyre_device_copy).
    void copy_from(const DeviceTensor &src);

    halide_buffer_t *raw() const { return const_cast<halide_buffer_t *>(buffer_.raw_buffer()); }
    std::string repr() const;

private:
    explicit DeviceTensor(Halide::Runtime::Buffer<void> buffer, bool is_view)
        : buffer_(std::move(buffer)), is_view_(is_view) {}
    int halide_dim(int torch_dim, const char *what) const;

    Halide::Runtime::Buffer<void> buffer_;
    bool is_view_ = false;
};

// Throws Error with spyre_last_error()'s message when `code` is not 0.
void check_runtime(int code, const std::string &what);

}  // namespace spyre_python
