// The C API generated kernels call (see spyre_runtime.h): program cache,
// buffer checks against the argument table, residency (device-resident
// tensors are used in place, host tensors are uploaded, outputs stay on the
// device or come back: docs/runtime.md), simulation, per-kernel statistics
// and the error path back to Halide. Process-wide state: device_state.h.
//
// Environment (read at each run unless noted):
//   SPYRE_SYNC=normal|serial|random  synchronization mode of the simulated device
//   SPYRE_SEED=N                     seed of SPYRE_SYNC=random (default 1)
//   SPYRE_DEBUG>=1                   one line per run on stderr (kernel, cycles, us)
//   SPYRE_PROFILE=1                  (at the first run) print the profile table at exit
//   SPYRE_TIMING_ONLY=1              (at first use) timing-only mode, see spyre_set_timing_only
//
// Timing-only mode (read once per call): the simulator runs with
// functional=false and null argument pointers, uploads and re-layouts are
// charged but move nothing, and the device tensors the call writes are
// marked as holding no values (DeviceBlock::holds_values).
#include "spyre/spyre_runtime.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include "device_state.h"
#include "spyre/error.h"
#include "spyre/layout.h"
#include "spyre/machine.h"
#include "spyre/program.h"
#include "spyre/program_format.h"
#include "spyre/report.h"
#include "spyre/simulator.h"
#include "spyre/spyre_device.h"
#include "spyre/validator.h"
#include "tensor_region.h"

namespace spyre {
namespace {

using RunError = RuntimeError;

// ---- program cache: decode + validate once per blob ----

struct CachedProgram {
    size_t size = 0;
    uint64_t trailer = 0;  // the blob's last 8 bytes (its checksum)
    std::shared_ptr<const Program> program;
};

uint64_t blob_trailer(const uint8_t *data, size_t size) {
    uint64_t t = 0;
    if (size >= 8) std::memcpy(&t, data + size - 8, 8);
    return t;
}

// Blobs embedded in generated objects are constants, so their address names
// them. Size and checksum are compared as well, so a heap blob freed and
// another allocated at the same address (tests, JIT) is not mistaken for it.
std::shared_ptr<const Program> load_program(const uint8_t *data, size_t size) {
    static std::mutex mutex;
    static auto *cache = new std::map<const uint8_t *, CachedProgram>();  // never destroyed: usable at exit
    const uint64_t trailer = blob_trailer(data, size);
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache->find(data);
    if (it != cache->end() && it->second.size == size && it->second.trailer == trailer) return it->second.program;

    const MachineDescription &m = default_machine();
    auto program = std::make_shared<Program>();
    try {
        *program = decode_program(data, size);
    } catch (const Error &e) {
        throw RunError(spyre_error_bad_program,
                       "spyre_run_program: the program blob (" + std::to_string(size) + " bytes) is malformed: " + e.what());
    }
    try {
        validate_program(*program, m);
    } catch (const Error &e) {
        const int code = program->machine_fingerprint != m.structural_fingerprint() ? spyre_error_machine_mismatch
                                                                                    : spyre_error_bad_program;
        throw RunError(code, program->kernel_name + ": " + e.what());
    }
    (*cache)[data] = CachedProgram{size, trailer, program};
    return program;
}

// ---- buffer checks ----

bool type_matches(const halide_type_t &t, DType d) {
    DType have;
    return dtype_of(t, &have) && have == d;
}

const char *halide_name_of(DType d) {
    switch (d) {
    case DType::F32: return "float32";
    case DType::F16: return "float16";
    case DType::I32: return "int32";
    case DType::I8: return "int8";
    }
    return "?";
}

// How one caller buffer takes part in a run (see "Residency" in docs/runtime.md).
struct BufferUse {
    halide_buffer_t *buf = nullptr;
    int arg = 0;                     // index in the program's argument table
    uint64_t tensor_id = 0;          // non-zero: buf->device, a live Spyre device tensor
    DeviceTensor tensor;             // its state when the run started
    bool upload_into_tensor = false; // input, host-dirty: copy_to_device into its own allocation first
    bool relayout = false;           // input: re-laid out into a temporary in the program's layout
    bool install_block = false;      // output: the run's block replaces the tensor's allocation afterwards
    bool is_view = false;            // a crop, slice or transposed view of a device tensor (whole, checked)
    // An input that is a contiguous crop (TensorRegion::as_contiguous_crop): its bytes in the block.
    int64_t crop_offset = 0, crop_bytes = -1;
};

// The checks of a host build of the same generator, with its error codes: a
// wrong type (bad_type) or rank (bad_dimensions); a buffer that does not cover
// the region [0, extent) the kernel reads or writes in every dimension
// (access_out_of_bounds); one that covers it but is not exactly the compiled
// shape at min 0 (constraint_violated: generators fix their shapes). A
// buffer's min is never ignored, so a shifted buffer cannot give a shifted result.
BufferUse check_buffer(const Program &p, int arg, int index, halide_buffer_t *b, bool timing, int64_t stick_bytes) {
    const ProgramArgument &a = p.args[arg];
    const std::string who = p.kernel_name + ": buffer '" + a.name + "'";
    if (b == nullptr) {
        throw RunError(spyre_error_bad_argument, who + " (buffer " + std::to_string(index) + ") is a null halide_buffer_t pointer");
    }
    if (!type_matches(b->type, a.shape.dtype)) {
        throw RunError(halide_error_code_bad_type, who + " has type " + halide_type_name(b->type) +
                                                       ", the kernel was compiled for " + dtype_name(a.shape.dtype) + " (" +
                                                       halide_name_of(a.shape.dtype) + ")");
    }
    const int rank = (int)a.shape.extent.size();
    if (b->dimensions != rank) {
        throw RunError(halide_error_code_bad_dimensions, who + " has " + std::to_string(b->dimensions) +
                                                             " dimensions, the kernel was compiled for " + std::to_string(rank));
    }
    for (int d = 0; d < rank; d++) {
        const int64_t min = b->dim[d].min, extent = b->dim[d].extent, want = a.shape.extent[d];
        const std::string dim = who + " dimension " + std::to_string(d);
        if (min > 0 || min + extent < want) {
            throw RunError(halide_error_code_access_out_of_bounds,
                           dim + " covers [" + std::to_string(min) + ", " + std::to_string(min + extent - 1) + "] (min " +
                               std::to_string(min) + ", extent " + std::to_string(extent) + "); the kernel accesses [0, " +
                               std::to_string(want - 1) + "]");
        }
        if (min != 0) {
            throw RunError(halide_error_code_constraint_violated, dim + " has min " + std::to_string(min) + " and extent " +
                                                            std::to_string(extent) +
                                                            ", the kernel was compiled for min 0 and extent " +
                                                            std::to_string(want));
        }
        if (extent != want) {
            throw RunError(halide_error_code_constraint_violated, dim + " has extent " + std::to_string(extent) +
                                                            ", the kernel was compiled for " + std::to_string(want));
        }
    }
    BufferUse u;
    u.buf = b;
    u.arg = arg;
    if (b->device_interface == spyre_device_interface()) {
        if (b->device == 0 || !find_tensor(b->device, &u.tensor)) {
            throw RunError(spyre_error_bad_argument,
                           who + " names Spyre device allocation " + std::to_string(b->device) +
                               ", which was freed (device_free) or never existed");
        }
        TensorRegion r;
        try {
            r = resolve_region(b, who.c_str());
        } catch (const RuntimeError &e) {
            if (e.code != spyre_error_buffer_mismatch) throw;
            throw RunError(e.code, who + " has a Spyre device allocation of another type or shape: " + e.what());
        }
        DeviceLayout view_layout;
        // An input may be a crop of its tensor's outermost dim in the device order alone: its
        // bytes are one contiguous run of the tensor's, bound as they are (nothing moves).
        const bool whole = r.as_layout(&view_layout);
        const bool crop = !whole && a.kind == ArgKind::Input &&
                          r.as_contiguous_crop(stick_bytes, &view_layout, &u.crop_offset, &u.crop_bytes);
        if (!whole && !crop) {
            throw RunError(spyre_error_buffer_mismatch,
                           who + " is a crop or slice " + r.shape_string() + " of a device tensor " +
                               TensorRegion{0, r.tensor, {}, r.tensor.shape.extent, {}}.shape_string() +
                               "; kernels take whole tensors (no strided arguments), and inputs also crops of the "
                               "outermost dimension of the tensor's device layout alone: copy the region into its own "
                               "tensor with spyre_device_copy first");
        }
        if (crop && b->host_dirty()) {
            throw RunError(spyre_error_bad_argument,
                           who + " is a crop of a device tensor and host-dirty: copy the whole tensor to the device "
                                 "(copy_to_device) before passing a crop of it");
        }
        bool in_order = true;
        for (int i = 0; i < r.rank(); i++) in_order = in_order && r.alloc_dim[i] == i;
        u.tensor = r.tensor;
        u.tensor.shape.extent = r.extent;
        u.tensor.layout = view_layout;
        u.is_view = r.tensor.is_view || !in_order || r.rank() != (int)r.tensor.shape.extent.size();
        if (u.tensor.shape.dtype != a.shape.dtype || u.tensor.shape.extent != a.shape.extent) {
            throw RunError(spyre_error_buffer_mismatch, who + " has a Spyre device allocation of another type or shape");
        }
        if (u.is_view && !(view_layout == a.layout)) {
            throw RunError(spyre_error_buffer_mismatch,
                           who + " is a view (crop, slice or transposed) of a device tensor whose layout in the view's dims (" +
                               layout_to_string(view_layout) + ") is not the program's (" + layout_to_string(a.layout) +
                               "): copy the region into its own tensor with spyre_device_copy first");
        }
        if (b->host_dirty() && b->device_dirty()) {
            throw RunError(spyre_error_bad_argument, who + " is both host-dirty and device-dirty");
        }
        u.tensor_id = b->device;
        if (a.kind == ArgKind::Input && b->host_dirty()) {
            if (b->host == nullptr && !timing) throw RunError(spyre_error_null_host, who + " is host-dirty but has no host memory");
            u.upload_into_tensor = true;
        }
        if (a.kind == ArgKind::Input && !timing && !u.upload_into_tensor && !u.tensor.block->holds_values) {
            throw RunError(spyre_error_bad_argument,
                           who + " holds no values: its device tensor was written in timing-only mode "
                                 "(spyre_set_timing_only / SPYRE_TIMING_ONLY); write it again in functional mode first");
        }
        return u;
    }
    if (a.kind == ArgKind::Output && timing) {
        throw RunError(spyre_error_bad_argument,
                       who + " is a host buffer, but in timing-only mode a kernel computes no values, so it cannot fill "
                             "host memory; give the output a Spyre device allocation (device_malloc), which is then marked "
                             "as holding no values");
    }
    if (b->host == nullptr && !(timing && a.kind == ArgKind::Input)) {
        throw RunError(spyre_error_null_host, who + " has no host memory and no Spyre device allocation");
    }
    if (a.kind == ArgKind::Input && (b->flags & halide_buffer_flag_device_dirty)) {
        throw RunError(spyre_error_bad_argument,
                       who + " is device-dirty: its current contents live on a device the Spyre runtime does not manage; "
                             "copy it to the host (copy_to_host) before calling the kernel");
    }
    return u;
}

// A device block of the argument's size in the program's layout.
std::shared_ptr<DeviceBlock> allocate_argument(const Program &p, const ProgramArgument &a, int64_t stick_bytes) {
    const int64_t bytes = layout_addressing(a.shape, a.layout, stick_bytes).total_bytes;
    try {
        return std::make_shared<DeviceBlock>(bytes, p.kernel_name + "/" + a.name);
    } catch (const RuntimeError &e) {
        throw RunError(e.code, p.kernel_name + ": argument '" + a.name + "': " + e.what());
    }
}

// ---- environment ----

SimulationOptions options_from_environment() {
    SimulationOptions o;
    if (const char *s = std::getenv("SPYRE_SYNC"); s && *s) {
        const std::string v = s;
        if (v == "normal") o.sync = SyncMode::Normal;
        else if (v == "serial") o.sync = SyncMode::ForcedSerial;
        else if (v == "random") o.sync = SyncMode::RandomLatency;
        else throw RunError(spyre_error_bad_argument, "SPYRE_SYNC='" + v + "' is not one of normal, serial, random");
    }
    if (const char *s = std::getenv("SPYRE_SEED"); s && *s) {
        char *end = nullptr;
        errno = 0;
        const unsigned long long seed = std::strtoull(s, &end, 0);
        if (errno != 0 || *end != '\0') {
            throw RunError(spyre_error_bad_argument, std::string("SPYRE_SEED='") + s + "' is not an unsigned integer");
        }
        o.seed = seed;
    }
    return o;
}

int env_level(const char *name) {
    const char *s = std::getenv(name);
    return s ? std::atoi(s) : 0;
}

// ---- statistics ----

void copy_name(char *dst, size_t n, const std::string &s) { std::snprintf(dst, n, "%s", s.c_str()); }

double pt_utilization_of(double macs, double cycles, const MachineDescription &m) {
    return cycles > 0 ? macs / (cycles * m.pt_peak_macs_per_cycle_fp16 * m.cores) : 0.0;
}

double pt_sustained_utilization_of(double macs, double cycles, const MachineDescription &m) {
    return cycles > 0 ? macs / (cycles * m.pt_macs_per_cycle(1.0) * m.cores) : 0.0;
}

void record_run(const SimulationResult &r, const MachineDescription &m) {
    const PerformanceFigures f = performance_figures(r, m);
    spyre_kernel_stats s{};
    copy_name(s.kernel, sizeof s.kernel, r.kernel);
    s.calls = 1;
    s.cycles = r.cycles;
    s.simulated_us = r.simulated_us;
    s.roofline_bound_us = f.roofline_bound_us;
    s.pt_utilization = f.pt_utilization;
    s.pt_sustained_utilization = f.pt_sustained_utilization;
    s.macs = r.macs;
    s.dram_read_bytes = r.dram_read_bytes;
    s.dram_write_bytes = r.dram_write_bytes;
    copy_name(s.bottleneck, sizeof s.bottleneck, f.bottleneck);

    StatsRegistry &reg = stats_registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    reg.last = s;
    reg.have_last = true;
    KernelTotals &t = reg.kernels[r.kernel];
    spyre_kernel_stats &sum = t.sums;
    copy_name(sum.kernel, sizeof sum.kernel, r.kernel);
    sum.calls += 1;
    sum.cycles += s.cycles;
    sum.simulated_us += s.simulated_us;
    sum.roofline_bound_us += s.roofline_bound_us;
    sum.macs += s.macs;
    sum.dram_read_bytes += s.dram_read_bytes;
    sum.dram_write_bytes += s.dram_write_bytes;
    sum.pt_utilization = pt_utilization_of((double)sum.macs, sum.cycles, m);
    sum.pt_sustained_utilization = pt_sustained_utilization_of((double)sum.macs, sum.cycles, m);
    t.us_by_bottleneck[f.bottleneck] += s.simulated_us;
    auto top = std::max_element(t.us_by_bottleneck.begin(), t.us_by_bottleneck.end(),
                                [](const auto &x, const auto &y) { return x.second < y.second; });
    copy_name(sum.bottleneck, sizeof sum.bottleneck, top->first);
}

void print_profile_at_exit() { spyre_print_profile(stderr); }

void on_first_run() {
    static std::once_flag once;
    std::call_once(once, [] {
        stats_registry();  // exists before the handler is registered
        if (env_level("SPYRE_PROFILE") >= 1) std::atexit(print_profile_at_exit);
    });
}

// ---- one run ----

void run_loaded_program(void *user_context, const Program &p, const MachineDescription &m, int32_t num_buffers,
                        halide_buffer_t **buffers, int32_t num_params, const double *params);

void run_program(void *user_context, halide_buffer_t *blob, int32_t num_buffers, halide_buffer_t **buffers,
                 int32_t num_params, const double *params) {
    if (blob == nullptr || blob->host == nullptr) {
        throw RunError(spyre_error_bad_argument, "spyre_run_program: the program buffer is null or has no host memory");
    }
    if (blob->type.code != halide_type_uint || blob->type.bits != 8 || blob->type.lanes != 1 || blob->dimensions != 1 ||
        blob->dim[0].stride != 1 || blob->dim[0].extent <= 0) {
        throw RunError(spyre_error_bad_argument,
                       "spyre_run_program: the program buffer must be a dense 1-D uint8 buffer of the encoded program");
    }
    const std::shared_ptr<const Program> program = load_program(blob->host, (size_t)blob->dim[0].extent);
    const Program &p = *program;
    const MachineDescription &m = default_machine();
    try {
        run_loaded_program(user_context, p, m, num_buffers, buffers, num_params, params);
    } catch (const std::bad_alloc &) {
        // The host, not the program or the caller: out of memory, naming the kernel.
        throw RunError(spyre_error_out_of_memory,
                       p.kernel_name + ": host memory exhausted while running the kernel (simulated scratchpads, "
                                       "staging of host buffers or the replay's state)");
    }
}

void run_loaded_program(void *user_context, const Program &p, const MachineDescription &m, int32_t num_buffers,
                        halide_buffer_t **buffers, int32_t num_params, const double *params) {

    std::vector<int> user_arg;  // argument index of each buffer
    std::string names;
    for (size_t i = 0; i < p.args.size(); i++) {
        if (p.args[i].kind == ArgKind::Temp) continue;
        user_arg.push_back((int)i);
        names += (names.empty() ? "" : ", ") + p.args[i].name;
    }
    if (num_buffers != (int32_t)user_arg.size() || (num_buffers > 0 && buffers == nullptr)) {
        throw RunError(spyre_error_bad_argument, p.kernel_name + ": called with " + std::to_string(num_buffers) +
                                                     " buffers, the kernel takes " + std::to_string(user_arg.size()) +
                                                     " (inputs and outputs in argument order: " + names + ")");
    }
    if (num_params != (int32_t)p.params.size() || (num_params > 0 && params == nullptr)) {
        throw RunError(spyre_error_bad_argument, p.kernel_name + ": called with " + std::to_string(num_params) +
                                                     " scalar parameters, the kernel takes " + std::to_string(p.params.size()));
    }
    std::vector<BufferUse> uses;
    const bool timing = timing_only();
    for (size_t i = 0; i < user_arg.size(); i++) {
        uses.push_back(check_buffer(p, user_arg[i], (int)i, buffers[i], timing, m.stick_bytes));
    }
    SimulationOptions options = options_from_environment();
    options.functional = !timing;

    // Bind a device block to every argument. Everything is allocated first,
    // so exhaustion is found before any data moves.
    std::vector<std::shared_ptr<DeviceBlock>> blocks(p.args.size());
    std::vector<int64_t> offsets(p.args.size(), 0), sizes(p.args.size(), -1);  // a contiguous crop's bytes in its block
    auto bound = [&](const std::shared_ptr<DeviceBlock> &block) {
        return std::find(blocks.begin(), blocks.end(), block) != blocks.end();
    };
    for (BufferUse &u : uses) {
        const ProgramArgument &a = p.args[u.arg];
        if (a.kind != ArgKind::Input) continue;
        if (u.tensor_id == 0) {
            blocks[u.arg] = allocate_argument(p, a, m.stick_bytes);
            continue;
        }
        // Padding the kernel may read must be zero: a tensor whose padding a
        // kernel wrote (and that is not about to be re-uploaded) is re-laid out.
        const bool garbage_padding = !u.upload_into_tensor && !u.tensor.block->padding_is_zero &&
                                     layout_has_padding(u.tensor.shape, u.tensor.layout);
        u.relayout = !(u.tensor.layout == a.layout) || garbage_padding;
        blocks[u.arg] = u.relayout ? allocate_argument(p, a, m.stick_bytes) : u.tensor.block;
        if (!u.relayout && u.crop_bytes >= 0) {
            offsets[u.arg] = u.crop_offset;
            sizes[u.arg] = u.crop_bytes;
        }
    }
    for (size_t i = 0; i < p.args.size(); i++) {
        if (p.args[i].kind == ArgKind::Temp) blocks[i] = allocate_argument(p, p.args[i], m.stick_bytes);
    }
    for (BufferUse &u : uses) {
        const ProgramArgument &a = p.args[u.arg];
        if (a.kind != ArgKind::Output) continue;
        // A device-resident output is written in place when it has the
        // program's layout and no other argument of this run uses its memory.
        if (u.tensor_id != 0 && u.tensor.layout == a.layout && !bound(u.tensor.block)) {
            blocks[u.arg] = u.tensor.block;
        } else {
            blocks[u.arg] = allocate_argument(p, a, m.stick_bytes);
            u.install_block = u.tensor_id != 0;
        }
    }

    // Inputs: upload host data, re-lay out device tensors that need it.
    for (BufferUse &u : uses) {
        const ProgramArgument &a = p.args[u.arg];
        if (a.kind != ArgKind::Input) continue;
        DeviceBlock &block = *blocks[u.arg];
        if (u.tensor_id == 0) {
            if (!timing) pack_to_device(a.shape, a.layout, m.stick_bytes, host_view(u.buf), block.data());
            record_transfer(kHostToDevice, 0, block.bytes(), host_link_us(block.bytes()));
            continue;
        }
        if (u.upload_into_tensor && u.buf->host_dirty()) {  // what copy_to_device would do
            DeviceBlock &own = *u.tensor.block;
            if (!timing) {
                pack_to_device(u.tensor.shape, u.tensor.layout, m.stick_bytes, host_view(u.buf), own.data());
                own.padding_is_zero = true;
                own.holds_values = true;
            } else {
                own.holds_values = false;
            }
            record_transfer(kHostToDevice, 0, own.bytes(), host_link_us(own.bytes()));
            DeviceTensor still;
            if (!find_tensor(u.tensor_id, &still)) {
                throw RunError(spyre_error_bad_argument, p.kernel_name + ": buffer '" + a.name + "' was freed during the run");
            }
            u.buf->flags &= ~(uint64_t)halide_buffer_flag_host_dirty;
        }
        if (u.relayout) {
            const int64_t from_bytes = u.crop_bytes >= 0 ? u.crop_bytes : u.tensor.block->bytes();
            if (!timing) relayout_on_device(a.shape, u.tensor.layout, u.tensor.block->data() + u.crop_offset, a.layout, block.data());
            record_transfer(kRelayout, from_bytes, block.bytes(), relayout_us(block.bytes()));
        }
    }

    std::vector<ArgumentBinding> bindings;
    for (size_t i = 0; i < blocks.size(); i++) {
        const int64_t bytes = sizes[i] >= 0 ? sizes[i] : blocks[i]->bytes();
        bindings.push_back(ArgumentBinding{timing ? nullptr : blocks[i]->data() + offsets[i], bytes});
    }
    SimulationResult result;
    try {
        result = simulate_program(p, m, bindings, std::vector<double>(params, params + num_params), options);
    } catch (const SimulationError &e) {
        throw RunError(spyre_error_rule_violation, p.kernel_name + ": " + e.what());
    }

    // Outputs: device-resident ones stay on the device, host ones are copied back.
    for (BufferUse &u : uses) {
        const ProgramArgument &a = p.args[u.arg];
        if (a.kind != ArgKind::Output) continue;
        halide_buffer_t *b = u.buf;
        if (u.tensor_id == 0) {
            const DeviceBlock &block = *blocks[u.arg];
            unpack_from_device(a.shape, a.layout, m.stick_bytes, block.data(), host_view(b));
            record_transfer(kDeviceToHost, block.bytes(), 0, host_link_us(block.bytes()));
            // The host now holds the newest contents; any device copy is stale.
            b->flags = (b->flags | halide_buffer_flag_host_dirty) & ~(uint64_t)halide_buffer_flag_device_dirty;
            continue;
        }
        DeviceTensor t;
        if (!find_tensor(u.tensor_id, &t)) {
            throw RunError(spyre_error_bad_argument, p.kernel_name + ": buffer '" + a.name + "' was freed during the run");
        }
        DeviceBlock *written = blocks[u.arg].get();
        if (u.install_block && (u.is_view || records_naming(t.block.get()) > 1)) {
            // A view, or a tensor other records (crops, slices, spyre_device_view aliases) name the
            // block of: keep the block and write the result into it, re-laid out to the buffer's
            // layout of it (zero padding), so every record sees it.
            if (!timing) relayout_on_device(a.shape, a.layout, written->data(), u.tensor.layout, t.block->data());
            record_transfer(kRelayout, written->bytes(), t.block->bytes(), relayout_us(t.block->bytes()));
            written = t.block.get();
            written->padding_is_zero = !timing;
        } else if (u.install_block) {
            t.block = blocks[u.arg];
            t.layout = a.layout;
            update_tensor(u.tensor_id, t);
            written->padding_is_zero = false;  // kernels may write anything into padding
        } else {
            written->padding_is_zero = false;
        }
        written->holds_values = !timing;
        b->flags = (b->flags | halide_buffer_flag_device_dirty) & ~(uint64_t)halide_buffer_flag_host_dirty;
    }

    record_run(result, m);
    if (env_level("SPYRE_DEBUG") >= 1) {
        std::fprintf(stderr, "spyre: ran %s: %.0f cycles, %.3f us\n", p.kernel_name.c_str(), result.cycles,
                     result.simulated_us);
    }
    (void)user_context;
}

}  // namespace
}  // namespace spyre

extern "C" {

int spyre_run_program(void *user_context, halide_buffer_t *program, int32_t num_buffers, halide_buffer_t **buffers,
                      int32_t num_params, const double *params) {
    using namespace spyre;
    try {
        on_first_run();
        run_program(user_context, program, num_buffers, buffers, num_params, params);
        return spyre_success;
    } catch (const RunError &e) {
        return report_failure(user_context, e.code, e.what());
    } catch (const SimulationError &e) {
        return report_failure(user_context, spyre_error_rule_violation, e.what());
    } catch (const Error &e) {
        return report_failure(user_context, spyre_error_bad_program, e.what());
    } catch (const std::bad_alloc &) {
        return report_failure(user_context, spyre_error_out_of_memory,
                              "spyre_run_program: host memory exhausted while running the program");
    } catch (const std::system_error &e) {
        // A host resource (a thread the runtime could not start): the host's exhaustion, not a misuse.
        return report_failure(user_context, spyre_error_out_of_memory,
                              std::string("spyre_run_program: the host ran out of a resource: ") + e.what());
    } catch (const std::exception &e) {
        return report_failure(user_context, spyre_error_bad_argument, std::string("spyre_run_program: ") + e.what());
    } catch (...) {
        return report_failure(user_context, spyre_error_bad_argument, "spyre_run_program: unknown internal error");
    }
}

int spyre_get_last_run_stats(spyre_kernel_stats *out) {
    if (out == nullptr) return -1;
    spyre::StatsRegistry &reg = spyre::stats_registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    if (!reg.have_last) return -1;
    *out = reg.last;
    return 0;
}

int spyre_get_kernel_stats(const char *kernel, spyre_kernel_stats *out) {
    if (kernel == nullptr || out == nullptr) return -1;
    spyre::StatsRegistry &reg = spyre::stats_registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    auto it = reg.kernels.find(kernel);
    if (it == reg.kernels.end()) return -1;
    *out = it->second.sums;
    return 0;
}

const char *spyre_last_error(void) { return spyre::last_error().c_str(); }

int spyre_begin_kernel_call(void *) {
    spyre::set_last_error("");
    return 0;
}

void spyre_print_profile(FILE *out) {
    if (out == nullptr) return;
    std::vector<spyre_kernel_stats> rows;
    {
        spyre::StatsRegistry &reg = spyre::stats_registry();
        std::lock_guard<std::mutex> lock(reg.mutex);
        for (const auto &kv : reg.kernels) rows.push_back(kv.second.sums);
    }
    std::sort(rows.begin(), rows.end(),
              [](const spyre_kernel_stats &a, const spyre_kernel_stats &b) { return a.simulated_us > b.simulated_us; });
    std::fprintf(out, "Spyre profile (simulated device time)\n");
    std::fprintf(out, "%-24s %7s %14s %12s %14s %8s %8s %10s  %s\n", "kernel", "calls", "total us", "mean us", "bound us",
                 "% bound", "PT util", "DRAM MB", "bottleneck");
    for (const spyre_kernel_stats &s : rows) {
        const double mean = s.calls ? s.simulated_us / s.calls : 0.0;
        const double pct = s.simulated_us > 0 ? 100.0 * s.roofline_bound_us / s.simulated_us : 0.0;
        const double dram_mb = (double)(s.dram_read_bytes + s.dram_write_bytes) / 1e6;
        std::fprintf(out, "%-24s %7llu %14.3f %12.3f %14.3f %7.1f%% %7.1f%% %10.3f  %s\n", s.kernel,
                     (unsigned long long)s.calls, s.simulated_us, mean, s.roofline_bound_us, pct, 100.0 * s.pt_utilization,
                     dram_mb, s.bottleneck);
    }
    if (rows.empty()) std::fprintf(out, "(no Spyre kernel ran)\n");
}

}  // extern "C"
