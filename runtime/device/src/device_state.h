// The process-wide state of the simulated Spyre device, shared by the kernel
// entry point (halide_glue.cpp), the Halide device interface
// (device_interface.cpp) and the streams (stream.cpp):
//   - the one DeviceMemory (simulated DRAM) and RAII blocks of it;
//   - the registry of live device tensors, which halide_buffer_t::device names
//     by id (ids are never reused, so a stale id is detected, not followed);
//   - the per-process profile: kernel runs and data movement outside kernels
//     ("host->device", "device->host", "relayout", "device->device");
//   - the timing-only switch (spyre_set_timing_only, SPYRE_TIMING_ONLY);
//   - the error path of the C API (error code + message, spyre_last_error()).
// Internal to libspyre_runtime; not installed.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "HalideRuntime.h"
#include "spyre/device_memory.h"
#include "spyre/error.h"
#include "spyre/layout.h"
#include "spyre/spyre_runtime.h"

namespace spyre {

// ---- errors of the C API ----

// A failure with the C error code it maps to.
class RuntimeError : public Error {
public:
    RuntimeError(int code, const std::string &what) : Error(what), code(code) {}
    int code;
};

// Stores the message as this thread's spyre_last_error(), sends it to
// halide_error(user_context, ...) when a Halide runtime is linked (stderr
// otherwise) and returns `code`.
int report_failure(void *user_context, int code, const std::string &message);
// Sets this thread's spyre_last_error() without reporting anything.
void set_last_error(const std::string &message);
const std::string &last_error();

// Runs `body` and turns any exception into report_failure's code.
template <typename F>
int guarded(void *user_context, const char *where, F &&body) {
    try {
        return body();
    } catch (const RuntimeError &e) {
        return report_failure(user_context, e.code, e.what());
    } catch (const std::bad_alloc &) {
        return report_failure(user_context, spyre_error_out_of_memory, std::string(where) + ": host memory exhausted");
    } catch (const std::exception &e) {
        return report_failure(user_context, spyre_error_bad_argument, std::string(where) + ": " + e.what());
    } catch (...) {
        return report_failure(user_context, spyre_error_bad_argument, std::string(where) + ": unknown internal error");
    }
}

// ---- device memory ----

// The process-wide simulated DRAM (capacity dram_usable_bytes); never destroyed.
DeviceMemory &device_memory();

// ---- timing-only mode ----

// True while kernels run only the simulator's timing phase and copies move
// no bytes (spyre_set_timing_only; initially SPYRE_TIMING_ONLY=1 in the environment).
bool timing_only();
void set_timing_only(bool enabled);

// One allocation of device_memory(), returned to it when the last holder lets go.
// The state of its bytes is shared by every record that names it (a tensor
// and its views): whether its padding is known to be zero, and whether it
// holds values at all (false once written in timing-only mode).
class DeviceBlock {
public:
    // Throws RuntimeError(spyre_error_out_of_memory) naming `tag`, the requested and the free bytes.
    // In timing-only mode the block is a fresh mapping (never a pooled block, which would be zeroed),
    // so a block nothing writes costs no host memory.
    DeviceBlock(int64_t bytes, const std::string &tag);
    ~DeviceBlock();
    DeviceBlock(const DeviceBlock &) = delete;
    DeviceBlock &operator=(const DeviceBlock &) = delete;

    uint8_t *data() const { return data_; }
    int64_t bytes() const { return bytes_; }

    // false once a kernel wrote it (kernels may write garbage into padding)
    std::atomic<bool> padding_is_zero{true};
    // false once written in timing-only mode: its bytes are not the tensor's values
    std::atomic<bool> holds_values{true};

private:
    uint64_t handle_;
    uint8_t *data_;
    int64_t bytes_;
};

// ---- device tensors ----

// What halide_buffer_t::device names: a tensor in device DRAM in `layout`
// (the allocation), or a crop / slice of one (a view: same block, same
// allocation shape and layout, `origin` and `dim_alloc` say which region).
//
// The record's dims are those of the buffer it was made for (device_malloc,
// device_crop, ...): dim j indexes allocation dim dim_alloc[j] from
// allocation index origin[dim_alloc[j]]; allocation dims no record dim
// indexes are fixed at origin[k] (sliced away). dim_extent / dim_stride are
// that buffer's extents and host strides, which is how a buffer naming the
// record (possibly a transposed() copy, sharing the id) is matched to it
// (tensor_region.h).
struct DeviceTensor {
    TensorShape shape;    // the allocation's
    DeviceLayout layout;  // the allocation's
    std::shared_ptr<DeviceBlock> block;
    bool owns_host = false;  // host allocated by device_and_host_malloc
    bool is_view = false;    // made by device_crop / device_slice
    std::vector<int> dim_alloc;
    std::vector<int64_t> dim_extent, dim_stride;
    std::vector<int64_t> origin;  // per allocation dim
};

// The record of a whole allocation for a buffer of `shape` with host strides `strides`.
DeviceTensor whole_tensor_record(const TensorShape &shape, const DeviceLayout &layout, std::shared_ptr<DeviceBlock> block,
                                 const halide_buffer_t *buf);

uint64_t register_tensor(const DeviceTensor &t);
// Copies the live tensor `id` into *out; false if `id` is not live.
bool find_tensor(uint64_t id, DeviceTensor *out);
// Replaces the live tensor `id`; false if it is not live (any more).
bool update_tensor(uint64_t id, const DeviceTensor &t);
// Removes `id` (its block is freed once no run holds it); false if not live.
bool unregister_tensor(uint64_t id);
// How many live records (a tensor, its views and aliases) name `block`.
int records_naming(const DeviceBlock *block);

// True when the layout holds bytes that are not elements (so their contents matter).
bool layout_has_padding(const TensorShape &shape, const DeviceLayout &layout);

// Halide buffer <-> tensor description.
// The DType of a Halide element type; false if Spyre has none (e.g. uint16).
bool dtype_of(const halide_type_t &t, DType *out);
std::string halide_type_name(const halide_type_t &t);
HostView host_view(const halide_buffer_t *b);

// Re-lays a tensor out on the device (from `from` to `to`, padding of the
// result zeroed). Costs are the caller's to record (relayout_us of the bytes written).
void relayout_on_device(const TensorShape &shape, const DeviceLayout &from, const uint8_t *src, const DeviceLayout &to,
                        uint8_t *dst);

// ---- profile ----

struct KernelTotals {
    spyre_kernel_stats sums{};
    std::map<std::string, double> us_by_bottleneck;  // the reported bottleneck is the one with most time
};

struct StatsRegistry {
    std::mutex mutex;
    bool have_last = false;
    spyre_kernel_stats last{};
    std::map<std::string, KernelTotals> kernels;  // kernel runs and data-movement entries
};

StatsRegistry &stats_registry();  // never destroyed: the atexit profile reads it

// Profile entry names of data movement outside kernels.
constexpr const char *kHostToDevice = "host->device";
constexpr const char *kDeviceToHost = "device->host";
constexpr const char *kRelayout = "relayout";
constexpr const char *kDeviceToDevice = "device->device";

// Simulated time of moving `bytes` over the host link / re-laying them out on the device.
double host_link_us(int64_t bytes);
double relayout_us(int64_t bytes);

// Adds one transfer to the profile entry `entry` (calls += 1, simulated_us,
// dram_read_bytes / dram_write_bytes += the device bytes read / written).
// Does not change spyre_get_last_run_stats().
void record_transfer(const char *entry, int64_t device_read_bytes, int64_t device_write_bytes, double us);
// The same for any entry (spyre_profile_record), with the bottleneck it reports.
void record_profile_entry(const char *entry, int64_t device_read_bytes, int64_t device_write_bytes, double us,
                          const char *bottleneck);

// While one is alive in a thread, that thread's host<->device copies charge nothing
// (spyre_device_read_values / spyre_device_write_values: the caller charges its own time).
struct UnchargedTransfers {
    UnchargedTransfers();
    ~UnchargedTransfers();
    UnchargedTransfers(const UnchargedTransfers &) = delete;
    UnchargedTransfers &operator=(const UnchargedTransfers &) = delete;
};

}  // namespace spyre
