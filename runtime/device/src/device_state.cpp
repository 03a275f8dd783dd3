// The process-wide state of the simulated device (see device_state.h).
#include "device_state.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "spyre/machine.h"

// Present when the process links a Halide runtime (any AOT pipeline does);
// otherwise errors go to stderr.
extern "C" void halide_error(void *user_context, const char *msg) __attribute__((weak));

namespace spyre {

// ---- errors ----

namespace {
thread_local std::string t_last_error;
}

void set_last_error(const std::string &message) { t_last_error = message; }
const std::string &last_error() { return t_last_error; }

int report_failure(void *user_context, int code, const std::string &message) {
    t_last_error = message;
    if (&halide_error != nullptr) {
        const std::string line = message + "\n";
        halide_error(user_context, line.c_str());
    } else {
        std::fprintf(stderr, "spyre runtime error: %s\n", message.c_str());
    }
    return code;
}

// ---- device memory ----

DeviceMemory &device_memory() {
    // Never destroyed, so kernels may still run from other static destructors.
    static DeviceMemory *memory = new DeviceMemory(default_machine().dram_usable_bytes);
    return *memory;
}

DeviceBlock::DeviceBlock(int64_t bytes, const std::string &tag) : bytes_(bytes) {
    try {
        handle_ = device_memory().allocate(bytes, tag, /*use_pool=*/!timing_only());
    } catch (const Error &e) {
        throw RuntimeError(spyre_error_out_of_memory, e.what());
    }
    data_ = device_memory().data(handle_);
}

DeviceBlock::~DeviceBlock() {
    try {
        device_memory().free(handle_);
    } catch (...) {
    }
}

// ---- device tensors ----

namespace {

struct TensorRegistry {
    std::mutex mutex;
    uint64_t next_id = 1;
    std::map<uint64_t, DeviceTensor> live;
};

TensorRegistry &tensor_registry() {
    static TensorRegistry *r = new TensorRegistry();  // never destroyed: buffers may be freed at exit
    return *r;
}

}  // namespace

uint64_t register_tensor(const DeviceTensor &t) {
    TensorRegistry &r = tensor_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    const uint64_t id = r.next_id++;
    r.live[id] = t;
    return id;
}

bool find_tensor(uint64_t id, DeviceTensor *out) {
    TensorRegistry &r = tensor_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.live.find(id);
    if (it == r.live.end()) return false;
    *out = it->second;
    return true;
}

bool update_tensor(uint64_t id, const DeviceTensor &t) {
    TensorRegistry &r = tensor_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.live.find(id);
    if (it == r.live.end()) return false;
    it->second = t;
    return true;
}

bool unregister_tensor(uint64_t id) {
    std::shared_ptr<DeviceBlock> block;  // released outside the lock
    TensorRegistry &r = tensor_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.live.find(id);
    if (it == r.live.end()) return false;
    block = std::move(it->second.block);
    r.live.erase(it);
    return true;
}

DeviceTensor whole_tensor_record(const TensorShape &shape, const DeviceLayout &layout, std::shared_ptr<DeviceBlock> block,
                                 const halide_buffer_t *buf) {
    DeviceTensor t;
    t.shape = shape;
    t.layout = layout;
    t.block = std::move(block);
    const int rank = (int)shape.extent.size();
    t.origin.assign(rank, 0);
    for (int d = 0; d < rank; d++) {
        t.dim_alloc.push_back(d);
        t.dim_extent.push_back(shape.extent[d]);
        t.dim_stride.push_back(buf != nullptr && d < buf->dimensions ? buf->dim[d].stride : 0);
    }
    return t;
}

int records_naming(const DeviceBlock *block) {
    TensorRegistry &r = tensor_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    int n = 0;
    for (const auto &kv : r.live) n += kv.second.block.get() == block ? 1 : 0;
    return n;
}

bool layout_has_padding(const TensorShape &shape, const DeviceLayout &layout) {
    for (size_t d = 0; d < shape.extent.size(); d++) {
        if (layout.padded[d] != shape.extent[d]) return true;
    }
    return false;
}

bool dtype_of(const halide_type_t &t, DType *out) {
    if (t.lanes != 1) return false;
    if (t.code == halide_type_float && t.bits == 32) *out = DType::F32;
    else if (t.code == halide_type_float && t.bits == 16) *out = DType::F16;
    else if (t.code == halide_type_int && t.bits == 32) *out = DType::I32;
    else if (t.code == halide_type_int && t.bits == 8) *out = DType::I8;
    else return false;
    return true;
}

std::string halide_type_name(const halide_type_t &t) {
    const char *code = "handle";
    switch (t.code) {
    case halide_type_int: code = "int"; break;
    case halide_type_uint: code = "uint"; break;
    case halide_type_float: code = "float"; break;
    case halide_type_bfloat: code = "bfloat"; break;
    default: break;
    }
    std::string s = code + std::to_string((int)t.bits);
    if (t.lanes != 1) s += "x" + std::to_string((int)t.lanes);
    return s;
}

HostView host_view(const halide_buffer_t *b) {
    HostView v;
    v.base = b->host;
    for (int d = 0; d < b->dimensions; d++) {
        v.extent.push_back(b->dim[d].extent);
        v.stride_elems.push_back(b->dim[d].stride);
    }
    return v;
}

void relayout_on_device(const TensorShape &shape, const DeviceLayout &from, const uint8_t *src, const DeviceLayout &to,
                        uint8_t *dst) {
    const int64_t stick = default_machine().stick_bytes;
    // Through a dense scratch copy: layout.h is the one definition of both layouts.
    const int64_t eb = dtype_bytes(shape.dtype);
    int64_t elements = 1;
    HostView dense;
    for (int64_t e : shape.extent) {
        dense.extent.push_back(e);
        dense.stride_elems.push_back(elements);
        elements *= e;
    }
    std::vector<uint8_t> scratch((size_t)(elements * eb));
    dense.base = scratch.data();
    unpack_from_device(shape, from, stick, src, dense);
    pack_to_device(shape, to, stick, dense, dst);
}

// ---- profile ----

StatsRegistry &stats_registry() {
    static StatsRegistry *r = new StatsRegistry();
    return *r;
}

double host_link_us(int64_t bytes) { return (double)bytes / (default_machine().host_link_gbps * 1e3); }
double relayout_us(int64_t bytes) { return (double)bytes / (default_machine().restickify_gbps * 1e3); }

namespace {
thread_local int t_uncharged_depth = 0;
}

UnchargedTransfers::UnchargedTransfers() { t_uncharged_depth++; }
UnchargedTransfers::~UnchargedTransfers() { t_uncharged_depth--; }

void record_transfer(const char *entry, int64_t device_read_bytes, int64_t device_write_bytes, double us) {
    if (t_uncharged_depth > 0) return;
    record_profile_entry(entry, device_read_bytes, device_write_bytes, us,
                         std::string(entry) == kRelayout         ? "restickify"
                         : std::string(entry) == kDeviceToDevice ? "DRAM"
                                                                 : "host link");
}

void record_profile_entry(const char *entry, int64_t device_read_bytes, int64_t device_write_bytes, double us,
                          const char *bottleneck) {
    StatsRegistry &reg = stats_registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    KernelTotals &t = reg.kernels[entry];
    spyre_kernel_stats &s = t.sums;
    std::snprintf(s.kernel, sizeof s.kernel, "%s", entry);
    std::snprintf(s.bottleneck, sizeof s.bottleneck, "%s", bottleneck);
    s.calls += 1;
    s.simulated_us += us;
    s.roofline_bound_us += us;
    s.dram_read_bytes += (uint64_t)device_read_bytes;
    s.dram_write_bytes += (uint64_t)device_write_bytes;
}

}  // namespace spyre
