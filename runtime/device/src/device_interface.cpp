// The Halide device interface of the simulated Spyre device (spyre_device.h).
//
// Two tables, as Halide's own device runtimes have:
//   - halide_device_interface_impl_t: the device-specific operations. Its
//     layout is internal to Halide (src/runtime/device_interface.h at v14.0.0)
//     and mirrored here field for field; a Halide runtime linked into the app
//     (halide_copy_to_host(), halide_device_free(), ...) calls these, and does
//     the dirty-flag bookkeeping itself.
//   - halide_device_interface_t: the public entry points that
//     Halide::Runtime::Buffer calls (device_malloc, copy_to_device, ...). In
//     Halide's runtimes they are the generic halide_* functions; the Spyre
//     runtime must not need a Halide runtime, so it implements the same
//     contract (validation, dirty flags) on top of the impl table.
#include "spyre/spyre_device.h"

#include <cstdlib>
#include <cstring>

#include "device_state.h"
#include "spyre/machine.h"
#include "tensor_region.h"
#include "spyre/spyre_runtime.h"

// Mirrors Halide v14.0.0 src/runtime/device_interface.h exactly (order and types).
extern "C" struct halide_device_interface_impl_t {
    void (*use_module)();
    void (*release_module)();
    int (*device_malloc)(void *user_context, struct halide_buffer_t *buf);
    int (*device_free)(void *user_context, struct halide_buffer_t *buf);
    int (*device_sync)(void *user_context, struct halide_buffer_t *buf);
    int (*device_release)(void *user_context);
    int (*copy_to_host)(void *user_context, struct halide_buffer_t *buf);
    int (*copy_to_device)(void *user_context, struct halide_buffer_t *buf);
    int (*device_and_host_malloc)(void *user_context, struct halide_buffer_t *buf);
    int (*device_and_host_free)(void *user_context, struct halide_buffer_t *buf);
    int (*buffer_copy)(void *user_context, struct halide_buffer_t *src,
                       const struct halide_device_interface_t *dst_device_interface, struct halide_buffer_t *dst);
    int (*device_crop)(void *user_context, const struct halide_buffer_t *src, struct halide_buffer_t *dst);
    int (*device_slice)(void *user_context, const struct halide_buffer_t *src, int slice_dim, int slice_pos,
                        struct halide_buffer_t *dst);
    int (*device_release_crop)(void *user_context, struct halide_buffer_t *buf);
    int (*wrap_native)(void *user_context, struct halide_buffer_t *buf, uint64_t handle);
    int (*detach_native)(void *user_context, struct halide_buffer_t *buf);
};

namespace spyre {
namespace {

// ---- helpers ----

bool is_spyre(const halide_buffer_t *buf) { return buf->device_interface == spyre_device_interface(); }

void require_buffer(const halide_buffer_t *buf, const char *where) {
    if (buf == nullptr) throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": null halide_buffer_t pointer");
}

TensorShape shape_of(const halide_buffer_t *buf, const char *where) {
    TensorShape s;
    if (!dtype_of(buf->type, &s.dtype)) {
        throw RuntimeError(spyre_error_buffer_mismatch, std::string(where) + ": element type " + halide_type_name(buf->type) +
                                                            " has no Spyre device type (float32, float16, int32, int8)");
    }
    if (buf->dimensions < 1 || buf->dimensions > SPYRE_MAX_DIMENSIONS) {
        throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": a device tensor has 1 to " +
                                                         std::to_string(SPYRE_MAX_DIMENSIONS) + " dimensions, the buffer has " +
                                                         std::to_string(buf->dimensions));
    }
    for (int d = 0; d < buf->dimensions; d++) {
        if (buf->dim[d].extent < 1) {
            throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": dimension " + std::to_string(d) +
                                                             " has extent " + std::to_string(buf->dim[d].extent));
        }
        s.extent.push_back(buf->dim[d].extent);
    }
    return s;
}

// The live tensor buf->device names; an error if buf is not a live Spyre allocation.
DeviceTensor live_tensor(const halide_buffer_t *buf, const char *where) {
    require_buffer(buf, where);
    if (buf->device == 0 || !is_spyre(buf)) {
        throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": the buffer has no Spyre device allocation");
    }
    DeviceTensor t;
    if (!find_tensor(buf->device, &t)) {
        throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": the buffer's device allocation " +
                                                         std::to_string(buf->device) +
                                                         " was freed (device_free) or is not a live Spyre allocation");
    }
    return t;
}

void require_host(const halide_buffer_t *buf, const char *where) {
    if (buf->host == nullptr) throw RuntimeError(spyre_error_null_host, std::string(where) + ": the buffer has no host memory");
}

// Allocates and registers a tensor for buf in `layout` (checked) and points buf at it.
void allocate_tensor(halide_buffer_t *buf, const TensorShape &shape, const DeviceLayout &layout, const char *where) {
    const int64_t stick = default_machine().stick_bytes;
    try {
        check_layout(shape, layout, stick, where);
    } catch (const Error &e) {
        throw RuntimeError(spyre_error_bad_argument, e.what());
    }
    // Fresh device memory reads as zero: padding zero, values (zeros) held. An exhausted device
    // names the tensor (its shape, type and layout), not only the API that asked.
    const std::string tag = std::string("a ") + buffer_shape_string(buf) + " tensor in layout " + layout_to_string(layout) +
                            " (" + where + ")";
    auto block = std::make_shared<DeviceBlock>(layout_addressing(shape, layout, stick).total_bytes, tag);
    buf->device = register_tensor(whole_tensor_record(shape, layout, std::move(block), buf));
    buf->device_interface = spyre_device_interface();
}

// ---- the impl table (device-specific operations; no dirty-flag bookkeeping) ----

void use_module() {}
void release_module() {}

int impl_device_malloc(void *uc, halide_buffer_t *buf) {
    return guarded(uc, "spyre device_malloc", [&] {
        const char *where = "spyre device_malloc";
        require_buffer(buf, where);
        if (buf->device != 0) {
            if (!is_spyre(buf)) {
                throw RuntimeError(halide_error_code_incompatible_device_interface,
                                   std::string(where) + ": the buffer already has another device's allocation");
            }
            live_tensor(buf, where);  // already allocated (and live): nothing to do
            return 0;
        }
        const TensorShape shape = shape_of(buf, where);
        allocate_tensor(buf, shape, default_layout(shape, default_machine().stick_bytes), where);
        return 0;
    });
}

int impl_device_free(void *uc, halide_buffer_t *buf) {
    return guarded(uc, "spyre device_free", [&] {
        const char *where = "spyre device_free";
        require_buffer(buf, where);
        if (buf->device == 0) return 0;
        live_tensor(buf, where);
        unregister_tensor(buf->device);
        buf->device = 0;
        buf->device_interface = nullptr;
        buf->flags &= ~(uint64_t)halide_buffer_flag_device_dirty;
        return 0;
    });
}

int impl_device_sync(void *uc, halide_buffer_t *buf) {
    // Kernel calls and copies outside streams are synchronous: nothing is pending.
    return guarded(uc, "spyre device_sync", [&] {
        require_buffer(buf, "spyre device_sync");
        if (buf->device != 0) live_tensor(buf, "spyre device_sync");
        return 0;
    });
}

int impl_device_release(void *uc) {
    device_memory().release_pool();
    return 0;
}

// Bytes a host copy of the region moves: the whole device image of a whole
// tensor, else the region's elements rounded up to whole sticks.
int64_t host_copy_bytes(const TensorRegion &r) {
    if (r.whole()) return r.tensor.block->bytes();
    const int64_t stick = default_machine().stick_bytes;
    return (r.elements() * dtype_bytes(r.tensor.shape.dtype) + stick - 1) / stick * stick;
}

// The buffer's host memory as a view in the buffer's own dims.
int impl_copy_to_host(void *uc, halide_buffer_t *buf) {
    return guarded(uc, "spyre copy_to_host", [&] {
        const char *where = "spyre copy_to_host";
        const TensorRegion r = resolve_region(buf, where);
        if (!r.tensor.block->holds_values) {
            throw RuntimeError(spyre_error_bad_argument,
                               std::string(where) + ": the device tensor " + r.shape_string() +
                                   " holds no values: it was written in timing-only mode (spyre_set_timing_only / "
                                   "SPYRE_TIMING_ONLY), where kernels and copies compute nothing; write it again in "
                                   "functional mode before reading it");
        }
        require_host(buf, where);
        const int64_t stick = default_machine().stick_bytes;
        DeviceLayout as;
        if (r.as_layout(&as)) {
            TensorShape shape{r.tensor.shape.dtype, r.extent};
            unpack_from_device(shape, as, stick, r.tensor.block->data(), host_view(buf));
        } else {
            const int64_t eb = dtype_bytes(r.tensor.shape.dtype);
            const uint8_t *dev = r.tensor.block->data();
            uint8_t *host = buf->host;
            for_each_region_element(r, stick, [&](int64_t off, const int64_t *l) {
                int64_t h = 0;
                for (int i = 0; i < r.rank(); i++) h += l[i] * buf->dim[i].stride;
                std::memcpy(host + h * eb, dev + off, (size_t)eb);
            });
        }
        const int64_t bytes = host_copy_bytes(r);
        record_transfer(kDeviceToHost, bytes, 0, host_link_us(bytes));
        return 0;
    });
}

int impl_copy_to_device(void *uc, halide_buffer_t *buf) {
    return guarded(uc, "spyre copy_to_device", [&] {
        const char *where = "spyre copy_to_device";
        const TensorRegion r = resolve_region(buf, where);
        DeviceBlock &block = *r.tensor.block;
        const int64_t bytes = host_copy_bytes(r);
        if (timing_only()) {  // charged, no bytes moved: the tensor holds no values now
            record_transfer(kHostToDevice, 0, bytes, host_link_us(bytes));
            block.holds_values = false;
            return 0;
        }
        require_host(buf, where);
        const int64_t stick = default_machine().stick_bytes;
        DeviceLayout as;
        if (r.as_layout(&as)) {
            TensorShape shape{r.tensor.shape.dtype, r.extent};
            pack_to_device(shape, as, stick, host_view(buf), block.data());
            block.padding_is_zero = true;
            block.holds_values = true;
        } else {
            // Only the region's element lanes are written; other lanes and padding are left alone.
            const int64_t eb = dtype_bytes(r.tensor.shape.dtype);
            uint8_t *dev = block.data();
            const uint8_t *host = buf->host;
            for_each_region_element(r, stick, [&](int64_t off, const int64_t *l) {
                int64_t h = 0;
                for (int i = 0; i < r.rank(); i++) h += l[i] * buf->dim[i].stride;
                std::memcpy(dev + off, host + h * eb, (size_t)eb);
            });
        }
        record_transfer(kHostToDevice, 0, bytes, host_link_us(bytes));
        return 0;
    });
}

int impl_device_and_host_malloc(void *uc, halide_buffer_t *buf) {
    return guarded(uc, "spyre device_and_host_malloc", [&] {
        const char *where = "spyre device_and_host_malloc";
        require_buffer(buf, where);
        if (buf->host != nullptr || buf->device != 0) {
            throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": the buffer already has host or device memory");
        }
        const TensorShape shape = shape_of(buf, where);
        int64_t span = 1;  // elements from the min to the max coordinate
        for (int d = 0; d < buf->dimensions; d++) {
            if (buf->dim[d].stride < 0) {
                throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": negative strides are not supported");
            }
            span += (int64_t)(buf->dim[d].extent - 1) * buf->dim[d].stride;
        }
        const size_t bytes = (size_t)((span * dtype_bytes(shape.dtype) + 127) / 128 * 128);
        void *host = std::aligned_alloc(128, bytes);
        if (host == nullptr) throw std::bad_alloc();
        try {
            allocate_tensor(buf, shape, default_layout(shape, default_machine().stick_bytes), where);
        } catch (...) {
            std::free(host);
            throw;
        }
        DeviceTensor t;
        find_tensor(buf->device, &t);
        t.owns_host = true;
        update_tensor(buf->device, t);
        buf->host = static_cast<uint8_t *>(host);
        return 0;
    });
}

int impl_device_and_host_free(void *uc, halide_buffer_t *buf) {
    return guarded(uc, "spyre device_and_host_free", [&] {
        const char *where = "spyre device_and_host_free";
        require_buffer(buf, where);
        if (buf->device != 0) {
            const DeviceTensor t = live_tensor(buf, where);
            if (t.owns_host) {
                std::free(buf->host);
                buf->host = nullptr;
            }
        }
        return impl_device_free(uc, buf);
    });
}

int impl_buffer_copy(void *uc, halide_buffer_t *src, const halide_device_interface_t *dst_iface, halide_buffer_t *dst) {
    // Device to device is spyre_device_copy; other directions go through copy_to_host / copy_to_device.
    if (src != nullptr && dst != nullptr && is_spyre(src) && src->device != 0 && is_spyre(dst) && dst->device != 0 &&
        (dst_iface == nullptr || dst_iface == spyre_device_interface())) {
        return spyre_device_copy(uc, src, dst);
    }
    return report_failure(uc, halide_error_code_device_buffer_copy_failed,
                          "spyre buffer_copy: only device-to-device copies between Spyre device tensors are supported "
                          "(spyre_device_copy); use copy_to_host / copy_to_device for the host side");
}

// A crop or slice record: the same allocation, the region given by `origin`, the dims of `dst`.
void register_view(const TensorRegion &r, const std::vector<int> &src_dims, std::vector<int64_t> origin,
                   halide_buffer_t *dst) {
    DeviceTensor v = r.tensor;
    v.owns_host = false;
    v.is_view = true;
    v.origin = std::move(origin);
    v.dim_alloc.clear();
    v.dim_extent.clear();
    v.dim_stride.clear();
    for (size_t j = 0; j < src_dims.size(); j++) {
        v.dim_alloc.push_back(r.alloc_dim[src_dims[j]]);
        v.dim_extent.push_back(dst->dim[j].extent);
        v.dim_stride.push_back(dst->dim[j].stride);
    }
    dst->device = register_tensor(v);
    dst->device_interface = spyre_device_interface();
}

int impl_device_crop(void *uc, const halide_buffer_t *src, halide_buffer_t *dst) {
    return guarded(uc, "spyre device_crop", [&] {
        const char *where = "spyre device_crop";
        require_buffer(dst, where);
        const TensorRegion r = resolve_region(src, where);
        if (dst->device != 0) throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": the crop already has a device allocation");
        if (dst->dimensions != src->dimensions || !(dst->type == src->type)) {
            throw RuntimeError(spyre_error_buffer_mismatch, std::string(where) + ": the crop " + buffer_shape_string(dst) +
                                                                " must have the type and rank of the source " +
                                                                buffer_shape_string(src));
        }
        std::vector<int64_t> origin = r.origin;
        std::vector<int> dims;
        for (int i = 0; i < src->dimensions; i++) {
            const int64_t shift = (int64_t)dst->dim[i].min - src->dim[i].min;
            if (shift < 0 || dst->dim[i].extent < 1 || shift + dst->dim[i].extent > src->dim[i].extent) {
                throw RuntimeError(spyre_error_bad_argument,
                                   std::string(where) + ": dimension " + std::to_string(i) + " of the crop covers [" +
                                       std::to_string(dst->dim[i].min) + ", " +
                                       std::to_string((int64_t)dst->dim[i].min + dst->dim[i].extent - 1) +
                                       "], outside the source's [" + std::to_string(src->dim[i].min) + ", " +
                                       std::to_string((int64_t)src->dim[i].min + src->dim[i].extent - 1) + "]");
            }
            origin[r.alloc_dim[i]] += shift;
            dims.push_back(i);
        }
        register_view(r, dims, std::move(origin), dst);
        return 0;
    });
}

int impl_device_slice(void *uc, const halide_buffer_t *src, int slice_dim, int slice_pos, halide_buffer_t *dst) {
    return guarded(uc, "spyre device_slice", [&] {
        const char *where = "spyre device_slice";
        require_buffer(dst, where);
        const TensorRegion r = resolve_region(src, where);
        if (dst->device != 0) throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": the slice already has a device allocation");
        if (slice_dim < 0 || slice_dim >= src->dimensions || dst->dimensions != src->dimensions - 1 || !(dst->type == src->type)) {
            throw RuntimeError(spyre_error_buffer_mismatch, std::string(where) + ": slicing dimension " +
                                                                std::to_string(slice_dim) + " of " + buffer_shape_string(src) +
                                                                " cannot give " + buffer_shape_string(dst));
        }
        const int64_t shift = (int64_t)slice_pos - src->dim[slice_dim].min;
        if (shift < 0 || shift >= src->dim[slice_dim].extent) {
            throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": position " + std::to_string(slice_pos) +
                                                             " is outside dimension " + std::to_string(slice_dim) + " of " +
                                                             buffer_shape_string(src));
        }
        std::vector<int64_t> origin = r.origin;
        origin[r.alloc_dim[slice_dim]] += shift;
        std::vector<int> dims;
        for (int i = 0; i < src->dimensions; i++) {
            if (i != slice_dim) dims.push_back(i);
        }
        register_view(r, dims, std::move(origin), dst);
        return 0;
    });
}

int impl_device_release_crop(void *uc, halide_buffer_t *buf) {
    return guarded(uc, "spyre device_release_crop", [&] {
        require_buffer(buf, "spyre device_release_crop");
        if (buf->device != 0) {
            live_tensor(buf, "spyre device_release_crop");
            unregister_tensor(buf->device);  // the allocation lives on while other records name its block
        }
        buf->device = 0;
        buf->device_interface = nullptr;
        return 0;
    });
}

int impl_wrap_native(void *uc, halide_buffer_t *, uint64_t) {
    return report_failure(uc, halide_error_code_device_wrap_native_failed, "spyre wrap_native: not supported");
}

int impl_detach_native(void *uc, halide_buffer_t *) {
    return report_failure(uc, halide_error_code_device_detach_native_failed, "spyre detach_native: not supported");
}

const halide_device_interface_impl_t kImpl = {
    use_module,
    release_module,
    impl_device_malloc,
    impl_device_free,
    impl_device_sync,
    impl_device_release,
    impl_copy_to_host,
    impl_copy_to_device,
    impl_device_and_host_malloc,
    impl_device_and_host_free,
    impl_buffer_copy,
    impl_device_crop,
    impl_device_slice,
    impl_device_release_crop,
    impl_wrap_native,
    impl_detach_native,
};

// ---- the public table (Halide's generic contract: validation and dirty flags) ----

int check_flags(void *uc, const halide_buffer_t *buf, const char *where) {
    if (buf == nullptr) return report_failure(uc, halide_error_code_buffer_is_null, std::string(where) + ": null buffer");
    if (buf->host_dirty() && buf->device_dirty()) {
        return report_failure(uc, halide_error_code_host_and_device_dirty,
                              std::string(where) + ": the buffer is both host-dirty and device-dirty");
    }
    return 0;
}

int public_device_malloc(void *uc, halide_buffer_t *buf, const halide_device_interface_t *iface) {
    if (int r = check_flags(uc, buf, "spyre device_malloc")) return r;
    if (buf->device_interface != nullptr && buf->device_interface != iface) {
        return report_failure(uc, halide_error_code_incompatible_device_interface,
                              "spyre device_malloc: the buffer already uses another device interface");
    }
    return kImpl.device_malloc(uc, buf);
}

int public_device_free(void *uc, halide_buffer_t *buf) {
    if (buf == nullptr) return report_failure(uc, halide_error_code_buffer_is_null, "spyre device_free: null buffer");
    if (buf->device_interface == nullptr) {
        buf->flags &= ~(uint64_t)halide_buffer_flag_device_dirty;
        return 0;
    }
    return buf->device_interface->impl->device_free(uc, buf);
}

int public_device_sync(void *uc, halide_buffer_t *buf) {
    if (int r = check_flags(uc, buf, "spyre device_sync")) return r;
    return kImpl.device_sync(uc, buf);
}

void public_device_release(void *uc, const halide_device_interface_t *) { kImpl.device_release(uc); }

int public_copy_to_host(void *uc, halide_buffer_t *buf) {
    if (int r = check_flags(uc, buf, "spyre copy_to_host")) return r;
    if (!buf->device_dirty()) return 0;
    if (int r = kImpl.copy_to_host(uc, buf)) return r;
    buf->set_device_dirty(false);
    return 0;
}

int public_copy_to_device(void *uc, halide_buffer_t *buf, const halide_device_interface_t *iface) {
    if (int r = check_flags(uc, buf, "spyre copy_to_device")) return r;
    if (iface == nullptr) iface = buf->device_interface;
    if (iface != spyre_device_interface() || (buf->device != 0 && buf->device_interface != iface)) {
        return report_failure(uc, halide_error_code_incompatible_device_interface,
                              "spyre copy_to_device: the buffer's device allocation belongs to another device interface");
    }
    if (buf->device == 0) {
        if (int r = kImpl.device_malloc(uc, buf)) return r;
    }
    if (!buf->host_dirty()) return 0;
    if (int r = kImpl.copy_to_device(uc, buf)) return r;
    buf->set_host_dirty(false);
    return 0;
}

int public_device_and_host_malloc(void *uc, halide_buffer_t *buf, const halide_device_interface_t *iface) {
    if (int r = check_flags(uc, buf, "spyre device_and_host_malloc")) return r;
    return kImpl.device_and_host_malloc(uc, buf);
}

int public_device_and_host_free(void *uc, halide_buffer_t *buf) {
    if (buf == nullptr) return report_failure(uc, halide_error_code_buffer_is_null, "spyre device_and_host_free: null buffer");
    return kImpl.device_and_host_free(uc, buf);
}

int public_buffer_copy(void *uc, halide_buffer_t *src, const halide_device_interface_t *dst_iface, halide_buffer_t *dst) {
    return kImpl.buffer_copy(uc, src, dst_iface, dst);
}

int public_device_crop(void *uc, const halide_buffer_t *src, halide_buffer_t *dst) { return kImpl.device_crop(uc, src, dst); }

int public_device_slice(void *uc, const halide_buffer_t *src, int slice_dim, int slice_pos, halide_buffer_t *dst) {
    return kImpl.device_slice(uc, src, slice_dim, slice_pos, dst);
}

int public_device_release_crop(void *uc, halide_buffer_t *buf) { return kImpl.device_release_crop(uc, buf); }

int public_wrap_native(void *uc, halide_buffer_t *buf, uint64_t handle, const halide_device_interface_t *) {
    return kImpl.wrap_native(uc, buf, handle);
}

int public_detach_native(void *uc, halide_buffer_t *buf) { return kImpl.detach_native(uc, buf); }

int public_compute_capability(void *, int *major, int *minor) {
    if (major) *major = 1;
    if (minor) *minor = 0;
    return 0;
}

const halide_device_interface_t kInterface = {
    public_device_malloc,
    public_device_free,
    public_device_sync,
    public_device_release,
    public_copy_to_host,
    public_copy_to_device,
    public_device_and_host_malloc,
    public_device_and_host_free,
    public_buffer_copy,
    public_device_crop,
    public_device_slice,
    public_device_release_crop,
    public_wrap_native,
    public_detach_native,
    public_compute_capability,
    &kImpl,
};

}  // namespace
}  // namespace spyre

extern "C" {

const halide_device_interface_t *spyre_device_interface(void) { return &spyre::kInterface; }

int spyre_device_malloc_with_layout(void *user_context, halide_buffer_t *buf, const spyre_device_layout *layout) {
    using namespace spyre;
    return guarded(user_context, "spyre_device_malloc_with_layout", [&] {
        const char *where = "spyre_device_malloc_with_layout";
        require_buffer(buf, where);
        if (layout == nullptr) throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": null layout");
        if (buf->device != 0) throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": the buffer already has a device allocation");
        const TensorShape shape = shape_of(buf, where);
        if (layout->dimensions != buf->dimensions) {
            throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": the layout has " +
                                                             std::to_string(layout->dimensions) + " dimensions, the buffer " +
                                                             std::to_string(buf->dimensions));
        }
        DeviceLayout l;
        l.stick_dim = layout->stick_dim;
        l.order.assign(layout->order, layout->order + layout->dimensions);
        l.padded.assign(layout->padded, layout->padded + layout->dimensions);
        allocate_tensor(buf, shape, l, where);
        return 0;
    });
}

int spyre_device_get_layout(const halide_buffer_t *buf, spyre_device_layout *layout, int *padding_is_zero) {
    using namespace spyre;
    return guarded(nullptr, "spyre_device_get_layout", [&] {
        const DeviceTensor t = live_tensor(buf, "spyre_device_get_layout");
        if (layout != nullptr) {
            *layout = spyre_device_layout{};
            layout->dimensions = (int32_t)t.shape.extent.size();
            layout->stick_dim = t.layout.stick_dim;
            for (size_t d = 0; d < t.shape.extent.size(); d++) {
                layout->order[d] = t.layout.order[d];
                layout->padded[d] = t.layout.padded[d];
            }
            layout->bytes = t.block->bytes();
        }
        if (padding_is_zero != nullptr) {
            *padding_is_zero = t.block->padding_is_zero || !layout_has_padding(t.shape, t.layout) ? 1 : 0;
        }
        return 0;
    });
}

int spyre_device_region_layout(const halide_buffer_t *buf, spyre_device_layout *layout) {
    using namespace spyre;
    return guarded(nullptr, "spyre_device_region_layout", [&] {
        const char *where = "spyre_device_region_layout";
        if (layout == nullptr) throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": null layout pointer");
        const TensorRegion r = resolve_region(buf, where);
        const int64_t stick = default_machine().stick_bytes;
        DeviceLayout l;
        int64_t offset = 0, bytes = 0;
        if (r.as_layout(&l)) {
            bytes = r.tensor.block->bytes();
        } else if (!r.as_contiguous_crop(stick, &l, &offset, &bytes)) {
            throw RuntimeError(spyre_error_buffer_mismatch,
                               std::string(where) + ": the region " + r.shape_string() + " of a device tensor " +
                                   TensorRegion{0, r.tensor, {}, r.tensor.shape.extent, {}}.shape_string() +
                                   " is strided, not one run of its bytes; copy it into its own tensor with spyre_device_copy");
        }
        *layout = spyre_device_layout{};
        layout->dimensions = (int32_t)l.order.size();
        layout->stick_dim = l.stick_dim;
        for (size_t d = 0; d < l.order.size(); d++) {
            layout->order[d] = l.order[d];
            layout->padded[d] = l.padded[d];
        }
        layout->bytes = bytes;
        return 0;
    });
}

int spyre_device_view(void *user_context, const halide_buffer_t *src, halide_buffer_t *dst) {
    using namespace spyre;
    return guarded(user_context, "spyre_device_view", [&] {
        const char *where = "spyre_device_view";
        require_buffer(dst, where);
        const TensorRegion region = resolve_region(src, where);
        DeviceTensor t = region.tensor;
        if (!region.as_layout(&t.layout)) {
            throw RuntimeError(spyre_error_buffer_mismatch, std::string(where) + ": the source " + region.shape_string() +
                                                                " is a crop or slice of a device tensor, not a whole one; copy "
                                                                "the region into its own tensor with spyre_device_copy first");
        }
        t.shape.extent = region.extent;
        if (dst->device != 0) throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": the view already has a device allocation");
        const TensorShape shape = shape_of(dst, where);
        if (shape.dtype != t.shape.dtype) {
            throw RuntimeError(spyre_error_buffer_mismatch, std::string(where) + ": the view has another element type");
        }
        // The dimensions that are not of extent 1 must match, in order; a source
        // dimension of extent 1 must not be padded (else the bytes differ).
        std::vector<int> src_dims, dst_dims;
        for (int d = 0; d < (int)t.shape.extent.size(); d++) {
            if (t.shape.extent[d] != 1) {
                src_dims.push_back(d);
            } else if (t.layout.padded[d] != 1 || d == t.layout.stick_dim) {
                throw RuntimeError(spyre_error_buffer_mismatch, std::string(where) + ": source dimension " +
                                                                    std::to_string(d) + " has extent 1 but is padded in its device layout; "
                                                                    "only unpadded unit dimensions can be added or dropped without moving data");
            }
        }
        for (int d = 0; d < (int)shape.extent.size(); d++) {
            if (shape.extent[d] != 1) dst_dims.push_back(d);
        }
        bool same = src_dims.size() == dst_dims.size();
        for (size_t i = 0; same && i < src_dims.size(); i++) same = t.shape.extent[src_dims[i]] == shape.extent[dst_dims[i]];
        if (!same) {
            throw RuntimeError(spyre_error_buffer_mismatch, std::string(where) + ": the view's extents differ from the "
                                                                                   "source's other than by dimensions of extent 1 "
                                                                                   "(spyre_device_reshape splits and merges dims)");
        }
        if (src_dims.empty()) {
            throw RuntimeError(spyre_error_buffer_mismatch, std::string(where) + ": a tensor of one element has no stick dimension to keep");
        }
        // Same bytes, new dimension numbering: unit dimensions of the view go outermost.
        std::vector<int> to_dst(t.shape.extent.size(), -1);
        for (size_t i = 0; i < src_dims.size(); i++) to_dst[src_dims[i]] = dst_dims[i];
        DeviceLayout l;
        l.padded.assign(shape.extent.size(), 1);
        for (size_t i = 0; i < src_dims.size(); i++) l.padded[dst_dims[i]] = t.layout.padded[src_dims[i]];
        if (to_dst[t.layout.stick_dim] < 0) {
            throw RuntimeError(spyre_error_buffer_mismatch, std::string(where) + ": the stick dimension would be dropped");
        }
        l.stick_dim = to_dst[t.layout.stick_dim];
        for (int d = 0; d < (int)shape.extent.size(); d++) {
            if (shape.extent[d] == 1) l.order.push_back(d);
        }
        for (int d : t.layout.order) {
            if (to_dst[d] >= 0) l.order.push_back(to_dst[d]);
        }
        try {
            check_layout(shape, l, default_machine().stick_bytes, where);
        } catch (const Error &e) {
            throw RuntimeError(spyre_error_bad_argument, e.what());
        }
        dst->device = register_tensor(whole_tensor_record(shape, l, t.block, dst));
        dst->device_interface = spyre_device_interface();
        dst->flags &= ~(uint64_t)halide_buffer_flag_host_dirty;
        // The view's own host memory (if any) does not hold the tensor: the device copy is the current one.
        if ((src->flags & halide_buffer_flag_device_dirty) || dst->host != nullptr) {
            dst->flags |= halide_buffer_flag_device_dirty;
        }
        return 0;
    });
}

}  // extern "C"
