// Resolving a halide_buffer_t to the region of its device allocation (see tensor_region.h).
#include "tensor_region.h"

#include "spyre/spyre_device.h"

namespace spyre {

int64_t TensorRegion::elements() const {
    int64_t n = 1;
    for (int64_t e : extent) n *= e;
    return n;
}

bool TensorRegion::whole() const {
    const int arank = (int)tensor.shape.extent.size();
    std::vector<int64_t> covered(arank, 1);
    for (int i = 0; i < rank(); i++) covered[alloc_dim[i]] = extent[i];
    for (int k = 0; k < arank; k++) {
        if (origin[k] != 0 || covered[k] != tensor.shape.extent[k]) return false;
    }
    return true;
}

bool TensorRegion::as_layout(DeviceLayout *out) const {
    if (!whole()) return false;
    const int arank = (int)tensor.shape.extent.size();
    std::vector<int> to_buffer(arank, -1);
    for (int i = 0; i < rank(); i++) to_buffer[alloc_dim[i]] = i;
    DeviceLayout l;
    l.padded.assign(rank(), 1);
    for (int k = 0; k < arank; k++) {
        if (to_buffer[k] < 0) {
            if (tensor.layout.padded[k] != 1 || k == tensor.layout.stick_dim) return false;  // padded and left out
            continue;
        }
        l.padded[to_buffer[k]] = tensor.layout.padded[k];
    }
    if (to_buffer[tensor.layout.stick_dim] < 0) return false;
    l.stick_dim = to_buffer[tensor.layout.stick_dim];
    for (int k : tensor.layout.order) {
        if (to_buffer[k] >= 0) l.order.push_back(to_buffer[k]);
    }
    *out = l;
    return true;
}

bool TensorRegion::as_contiguous_crop(int64_t stick_bytes, DeviceLayout *out, int64_t *offset, int64_t *bytes) const {
    const int arank = (int)tensor.shape.extent.size();
    if (rank() != arank || tensor.layout.order.empty()) return false;
    const int outer = tensor.layout.order[0];
    if (outer == tensor.layout.stick_dim) return false;
    std::vector<int> to_buffer(arank, -1);
    std::vector<int64_t> covered(arank, 0);
    for (int i = 0; i < rank(); i++) {
        to_buffer[alloc_dim[i]] = i;
        covered[alloc_dim[i]] = extent[i];
    }
    for (int k = 0; k < arank; k++) {
        if (to_buffer[k] < 0) return false;
        if (k != outer && (origin[k] != 0 || covered[k] != tensor.shape.extent[k])) return false;
    }
    DeviceLayout l;
    l.padded.assign(rank(), 1);
    for (int k = 0; k < arank; k++) l.padded[to_buffer[k]] = k == outer ? covered[k] : tensor.layout.padded[k];
    l.stick_dim = to_buffer[tensor.layout.stick_dim];
    for (int k : tensor.layout.order) l.order.push_back(to_buffer[k]);
    const LayoutAddressing whole = layout_addressing(tensor.shape, tensor.layout, stick_bytes);
    *offset = origin[outer] * whole.stride_bytes[outer];
    *bytes = layout_addressing(TensorShape{tensor.shape.dtype, extent}, l, stick_bytes).total_bytes;
    *out = l;
    return true;
}

void TensorRegion::alloc_index(const int64_t *l, int64_t *x) const {
    for (size_t k = 0; k < origin.size(); k++) x[k] = origin[k];
    for (int i = 0; i < rank(); i++) x[alloc_dim[i]] += l[i];
}

namespace {

std::string shape_text(const std::vector<int64_t> &extent, const std::string &type) {
    std::string s = "(";
    for (size_t i = 0; i < extent.size(); i++) s += (i ? ", " : "") + std::to_string(extent[i]);
    return s + ") " + type;
}

std::string dtype_text(DType d) {
    switch (d) {
    case DType::F32: return "float32";
    case DType::F16: return "float16";
    case DType::I32: return "int32";
    case DType::I8: return "int8";
    }
    return "?";
}

}  // namespace

std::string TensorRegion::shape_string() const { return shape_text(extent, dtype_text(tensor.shape.dtype)); }

std::string buffer_shape_string(const halide_buffer_t *buf) {
    if (buf == nullptr) return "(null buffer)";
    std::vector<int64_t> e;
    for (int d = 0; d < buf->dimensions; d++) e.push_back(buf->dim[d].extent);
    return shape_text(e, halide_type_name(buf->type));
}

TensorRegion resolve_region(const halide_buffer_t *buf, const char *where) {
    const std::string w = where;
    if (buf == nullptr) throw RuntimeError(spyre_error_bad_argument, w + ": null halide_buffer_t pointer");
    if (buf->device == 0 || buf->device_interface != spyre_device_interface()) {
        throw RuntimeError(spyre_error_bad_argument, w + ": the buffer " + buffer_shape_string(buf) +
                                                         " has no Spyre device allocation (device_malloc or copy_to_device it first)");
    }
    TensorRegion r;
    r.id = buf->device;
    if (!find_tensor(buf->device, &r.tensor)) {
        throw RuntimeError(spyre_error_bad_argument, w + ": the buffer's device allocation " + std::to_string(buf->device) +
                                                         " was freed (device_free) or is not a live Spyre allocation");
    }
    const DeviceTensor &t = r.tensor;
    DType dt;
    if (!dtype_of(buf->type, &dt) || dt != t.shape.dtype) {
        throw RuntimeError(spyre_error_buffer_mismatch, w + ": the buffer's element type " + halide_type_name(buf->type) +
                                                            " differs from its device allocation's (" +
                                                            dtype_text(t.shape.dtype) + ")");
    }
    const int rank = buf->dimensions;
    const int rrank = (int)t.dim_alloc.size();
    std::vector<int> match(rank, -1);
    bool ok = rank == rrank;
    if (ok) {  // 1. in order, same extents and strides
        for (int i = 0; i < rank && ok; i++) {
            ok = buf->dim[i].extent == t.dim_extent[i] && buf->dim[i].stride == t.dim_stride[i];
            match[i] = i;
        }
    }
    if (!ok && rank == rrank) {  // 2. a permutation by (extent, stride), in order where ambiguous
        std::vector<bool> used(rrank, false);
        ok = true;
        for (int i = 0; i < rank && ok; i++) {
            auto fits = [&](int j) {
                return !used[j] && buf->dim[i].extent == t.dim_extent[j] && buf->dim[i].stride == t.dim_stride[j];
            };
            int pick = fits(i) ? i : -1;
            for (int j = 0; j < rrank && pick < 0; j++) {
                if (fits(j)) pick = j;
            }
            ok = pick >= 0;
            if (ok) {
                used[pick] = true;
                match[i] = pick;
            }
        }
    }
    if (!ok && rank == rrank) {  // 3. in order by extent alone
        ok = true;
        for (int i = 0; i < rank && ok; i++) {
            ok = buf->dim[i].extent == t.dim_extent[i];
            match[i] = i;
        }
    }
    if (!ok) {
        throw RuntimeError(spyre_error_buffer_mismatch,
                           w + ": the buffer " + buffer_shape_string(buf) + " does not match its device record " +
                               shape_text(t.dim_extent, dtype_text(t.shape.dtype)) +
                               " in any order of its dims (extents and host strides); it was reshaped after the device "
                               "allocation was made (use spyre_device_view or spyre_device_reshape for another shape)");
    }
    r.origin = t.origin;
    for (int i = 0; i < rank; i++) {
        r.alloc_dim.push_back(t.dim_alloc[match[i]]);
        r.extent.push_back(t.dim_extent[match[i]]);
    }
    return r;
}

}  // namespace spyre
