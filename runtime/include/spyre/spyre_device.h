/* Tensors that live on the (simulated) Spyre device: a Halide device interface.
 *
 *   Halide::Runtime::Buffer<float> a(1024, 64);
 *   a.device_malloc(spyre_device_interface());       // device DRAM, default layout
 *   a.copy_to_device(spyre_device_interface());      // host -> device (if host-dirty)
 *   my_kernel(a, b, c);                              // a read on the device; c stays there
 *   c.copy_to_host();                                // device -> host
 *   a.device_free();
 *
 * buffer->device holds the id of a runtime record {device allocation, the
 * tensor's device layout, the region of it the buffer sees}; the allocation
 * knows whether its padding is zero and whether it holds values (not after a
 * timing-only write, spyre_set_timing_only). Buffer::cropped / sliced give
 * views of the same allocation (device_crop / device_slice); transposed()
 * buffers share the id and are recognised by host stride. Ids are
 * never reused: a halide_buffer_t that still names a freed allocation gets an
 * error code from every Spyre entry point, never a crash. Copies pack and
 * unpack between the host strides and the device layout and are accounted as
 * host-link time in the profile entries "host->device" and "device->host"
 * (spyre_get_kernel_stats). The residency rule of kernel calls and the error
 * codes are documented in docs/runtime.md ("Views", "Device-to-device
 * copies", "Reshape views", "Timing-only mode").
 *
 * Only HalideRuntime.h is needed to use this header. */
#ifndef SPYRE_DEVICE_H
#define SPYRE_DEVICE_H

#include <stdint.h>

#include "HalideRuntime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The Spyre device interface (one per process; compare pointers to recognise
 * Spyre allocations: buf->device_interface == spyre_device_interface()). */
const struct halide_device_interface_t *spyre_device_interface(void);

#define SPYRE_MAX_DIMENSIONS 8

/* A device layout (see spyre/layout.h): sticks along `stick_dim`, dimensions
 * stored outermost first in `order`, each dimension padded to `padded[d]`
 * elements (the stick dimension to whole sticks). */
typedef struct spyre_device_layout {
    int32_t dimensions;
    int32_t stick_dim;
    int32_t order[SPYRE_MAX_DIMENSIONS];   /* outermost first; a permutation of 0..dimensions-1 */
    int64_t padded[SPYRE_MAX_DIMENSIONS];  /* per dimension, innermost (0) first */
    int64_t bytes;                         /* device bytes (filled in by spyre_device_get_layout) */
} spyre_device_layout;

/* device_malloc with an explicit layout instead of the default one (sticks
 * along dimension 0, host dimension order, padding only to whole sticks).
 * Returns 0 or a spyre_error_code (bad layout: spyre_error_bad_argument). */
int spyre_device_malloc_with_layout(void *user_context, struct halide_buffer_t *buf, const spyre_device_layout *layout);

/* The device layout the program file at `program_path` (a <kernel>.spyre the
 * build writes next to each kernel) expects for its argument `arg_name`: an
 * app allocates a tensor in it (spyre_device_malloc_with_layout) so the
 * kernel reads or writes it without a relayout. Returns 0,
 * spyre_error_bad_program (unreadable or malformed file) or
 * spyre_error_bad_argument (no such argument); spyre_last_error() says which. */
int spyre_program_argument_layout(const char *program_path, const char *arg_name, spyre_device_layout *layout);

/* The layout of buf's device allocation, and whether its padding is known to
 * be zero (NULL to skip either). Returns 0, or spyre_error_bad_argument if buf
 * has no live Spyre allocation. */
int spyre_device_get_layout(const struct halide_buffer_t *buf, spyre_device_layout *layout, int *padding_is_zero);

/* The layout of the elements buf names, in buf's dims, when they are one
 * contiguous run of its device allocation's bytes: the whole tensor or a
 * view of it (transposed, spyre_device_view / spyre_device_reshape), or a
 * crop of the outermost dimension of the allocation's layout alone (the
 * allocation's layout with that dim's padded extent cut to the crop's;
 * layout->bytes the run's size). A kernel input of that layout reads such a
 * region in place (docs/runtime.md); a kernel output must be a whole tensor.
 * Returns 0, spyre_error_bad_argument (no live Spyre allocation) or
 * spyre_error_buffer_mismatch (a strided region: copy it into its own tensor
 * with spyre_device_copy). */
int spyre_device_region_layout(const struct halide_buffer_t *buf, spyre_device_layout *layout);

/* Makes `dst` a view of `src`'s device tensor with extent-1 dimensions added
 * or dropped (e.g. (H, S) as (H, S, 1)): the same device bytes, no data moved,
 * so kernels of different ranks chain on the device. dst describes the view's
 * shape (its host field may be null) and must have no device allocation; the
 * two buffers alias until each is device_free'd (the memory is released with
 * the last). Returns 0, or spyre_error_buffer_mismatch when the shapes differ
 * by more than unit dimensions or a dropped unit dimension is padded. */
int spyre_device_view(void *user_context, const struct halide_buffer_t *src, struct halide_buffer_t *dst);

/* Device-to-device copy of two regions of the same extents (unlike Halide's
 * buffer_copy, nothing is cropped to the destination's mins): element x of src
 * goes to element x of dst, x indexing the halide_buffer_t dims as the caller
 * sees them (so a transposed() view permutes). src and dst are Spyre device
 * buffers: whole tensors, crops, slices, transposed views or spyre_device_view
 * / spyre_device_reshape views; same element type, rank and extent in every
 * dimension; dst must not overlap src. Values go through both device layouts;
 * lanes of dst sticks outside the region (and padding) are left unchanged.
 * Charged as a DMA in the profile entry "device->device" (cost model in
 * docs/runtime.md). dst becomes device-dirty. In timing-only mode nothing
 * moves and dst's tensor then holds no values. Returns 0,
 * spyre_error_buffer_mismatch (type, rank or extents differ), or
 * spyre_error_bad_argument (not a live Spyre device buffer, overlap, src or
 * dst host-dirty, src holding no values). */
int spyre_device_copy(void *user_context, const struct halide_buffer_t *src, struct halide_buffer_t *dst);

/* Makes `dst` a view of `src`'s whole device tensor with another shape of the
 * same elements in the same order (Halide's dim 0 fastest) when the device
 * bytes are identical: dims are split or merged, e.g. (6144, B) as
 * (128, 48, B), (128, 32, B) as (128, 4, 8*B), (128, 8, B) as (128, 1, 8*B);
 * extent-1 dims may be added or dropped as with spyre_device_view. Rule: the
 * same element count; dims that are split or merged are unpadded and
 * adjacent in the layout's dimension order; the stick dim is split or merged
 * only as the innermost dim of its group and only at whole sticks. Nothing
 * moves; the two alias until both are freed (as spyre_device_view). Returns
 * 0, or spyre_error_buffer_mismatch naming why not. */
int spyre_device_reshape(void *user_context, const struct halide_buffer_t *src, struct halide_buffer_t *dst);

/* A device tensor's values to / from dense host memory (Halide dimension
 * order, dimension 0 fastest, buf's extents), for a library that charges its
 * own simulated time for the movement (the collectives, spyre_collectives.h):
 * nothing is added to the profile. buf is a live Spyre device buffer (whole
 * tensor or view); `dense` holds product(extents) elements. Reading a tensor
 * that holds no values (timing-only mode) fails; writing marks it as holding
 * values again. Returns 0, spyre_error_bad_argument or spyre_error_out_of_memory. */
int spyre_device_read_values(void *user_context, const struct halide_buffer_t *buf, void *dense);
int spyre_device_write_values(void *user_context, struct halide_buffer_t *buf, const void *dense);

#ifdef __cplusplus
}
#endif

#endif
