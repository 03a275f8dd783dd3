// The tensors of the model chain and the operations on them that are not
// kernels, for either realization of the chain: the Spyre device (tensors in
// device memory, copies between them as device DMA, views of the same bytes)
// or the host reference (plain host buffers, the same copies as host loops).
// The decoder (decoder.cpp) is written once against this interface, so the
// two chains are the same sequence of kernels and copies by construction.
//
// Tensors are fp16 Halide buffers, innermost dimension first. A region of a
// tensor is Buffer::cropped / sliced / transposed (on the device these are
// views of the same device allocation, spyre/spyre_device.h); copies take two
// regions of the same extents and copy element (x0, x1, ...) of the source,
// counted from its own mins, to the same element of the destination.
//
// In timing-only mode (device only) no tensor holds values: nothing is
// uploaded, kernels and copies run the timing simulation only, and no device
// tensor has host memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "HalideBuffer.h"

namespace llm {

using Tensor = Halide::Runtime::Buffer<void>;

extern const halide_type_t kF16;  // the chain's element type

class Realization {
public:
    Realization(bool on_device, bool timing_only);

    bool on_device() const { return on_device_; }
    bool timing_only() const { return timing_only_; }
    const char *name() const { return on_device_ ? "spyre" : "host"; }

    // A new tensor (zeros on the host; on the device a fresh allocation, with
    // host memory only if asked for, for a tensor the host will read back).
    // fp16 unless `type` says otherwise (a norm's float32 row scale).
    Tensor make(const std::vector<int> &extents, bool host_memory = false, halide_type_t type = kF16) const;
    // A new tensor holding `host` (a host tensor of the same extents): on the
    // device uploaded (charged as host->device), on the host a copy.
    Tensor make_from_host(const Tensor &host) const;
    // dst = src, elementwise (same extents); see the header comment.
    void copy(const Tensor &src, Tensor dst) const;
    // The same elements with other extents: on the device a view of the same
    // device bytes (nothing moves; spyre_device_reshape's rules), on the host
    // a new buffer holding them (so take views of tensors already written).
    Tensor reshape(Tensor &t, const std::vector<int> &extents) const;
    // Makes t's host memory hold its values (device: copied back, charged as
    // device->host; t must have been made with host memory).
    void to_host(Tensor &t) const;

    // Throws std::runtime_error naming `what` and the runtime's message unless rc == 0.
    void check(int rc, const std::string &what) const;

private:
    bool on_device_, timing_only_;
};

// fp16 helpers.
float f16_at(const Tensor &t, const std::vector<int> &coords);
void fill_uniform_f16(Tensor &t, uint64_t seed, float center, float half_width);

}  // namespace llm
