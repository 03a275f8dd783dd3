// Which elements of a device allocation a halide_buffer_t names.
//
// A buffer names a record (device_state.h) by id: a whole allocation, or a
// crop / slice of one. Halide's Buffer::transposed() (and translated())
// share the id without telling the device, so the buffer's dims are matched
// to the record's by host stride and extent, as Halide's own device backends
// address crops by stride: first in order (the common case), then as a
// permutation of the record's dims with the same (extent, stride) pairs
// (ambiguous pairs, e.g. several extent-1 dims, are taken in order), and
// last, for compatibility, in order by extent alone (a buffer whose strides
// were changed). Anything else is spyre_error_buffer_mismatch naming both
// shapes. The min of a buffer's dims never matters here: element i of a dim
// is the i-th from its min.
//
// The result is a region: per buffer dim the allocation dim it indexes and
// its extent, per allocation dim the index of the region's first element.
// Internal to libspyre_runtime.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device_state.h"

namespace spyre {

struct TensorRegion {
    uint64_t id = 0;               // the record the buffer names
    DeviceTensor tensor;           // the record (allocation shape, layout, block)
    std::vector<int> alloc_dim;    // per buffer dim
    std::vector<int64_t> extent;   // per buffer dim
    std::vector<int64_t> origin;   // per allocation dim

    int rank() const { return (int)alloc_dim.size(); }
    int64_t elements() const;
    // Every element of the allocation, each once.
    bool whole() const;
    // whole(), and the allocation's layout renumbered in the buffer's dims is
    // a layout of the buffer's shape (no padded allocation dim is left out).
    bool as_layout(DeviceLayout *out) const;
    // A crop of the allocation's outermost dimension in its layout order alone
    // (every other dim whole, none sliced away, and that dim not the stick
    // dim): its elements are one contiguous run of the allocation's bytes. Then
    // *out is the allocation's layout renumbered in the buffer's dims with that
    // dim's padded extent cut to the crop's, *offset the run's first byte in
    // the allocation and *bytes its size.
    bool as_contiguous_crop(int64_t stick_bytes, DeviceLayout *out, int64_t *offset, int64_t *bytes) const;
    // The allocation index of the region's element at local index l (per buffer dim).
    void alloc_index(const int64_t *l, int64_t *x) const;
    std::string shape_string() const;  // "(40, 6) float32"
};

// The region `buf` names; throws RuntimeError (bad_argument: no live Spyre
// allocation; buffer_mismatch: dims that match no arrangement of the record's).
TensorRegion resolve_region(const halide_buffer_t *buf, const char *where);

// "(40, 6) float32" of a halide buffer.
std::string buffer_shape_string(const halide_buffer_t *buf);

// Calls fn(device byte offset, local index) for every element of the region (buffer dim 0 fastest).
template <typename Fn>
void for_each_region_element(const TensorRegion &r, int64_t stick_bytes, Fn fn) {
    const LayoutAddressing a = layout_addressing(r.tensor.shape, r.tensor.layout, stick_bytes);
    const int rank = r.rank();
    std::vector<int64_t> l(rank, 0), x(r.origin.size(), 0);
    while (true) {
        r.alloc_index(l.data(), x.data());
        fn(device_offset(a, r.tensor.layout, x.data()), l.data());
        int d = 0;
        for (; d < rank; d++) {
            if (++l[d] < r.extent[d]) break;
            l[d] = 0;
        }
        if (d == rank) break;
    }
}

}  // namespace spyre
