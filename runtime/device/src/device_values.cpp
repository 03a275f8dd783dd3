// spyre_device_read_values / spyre_device_write_values (spyre_device.h): a
// device tensor's values to and from dense host memory, uncharged, through
// the device interface's own copies (so views, layouts and the holds-values
// state behave exactly as copy_to_host / copy_to_device).
#include <cstring>
#include <vector>

#include "device_state.h"
#include "spyre/spyre_device.h"
#include "spyre/spyre_runtime.h"

namespace {

using namespace spyre;

// Host staging for buf's own strides (the runtime recognises a view by them):
// the elements at sum(x[d] * stride[d]) for x in the extents.
struct Staging {
    halide_buffer_t buffer{};
    std::vector<halide_dimension_t> dims;
    std::vector<uint8_t> bytes;
    int64_t element_bytes = 0;

    explicit Staging(const halide_buffer_t *buf) : buffer(*buf), dims(buf->dim, buf->dim + buf->dimensions) {
        buffer.dim = dims.data();
        element_bytes = (buf->type.bits + 7) / 8;
        int64_t span = 1;
        for (const halide_dimension_t &d : dims) {
            if (d.stride < 0) throw RuntimeError(spyre_error_bad_argument, "a buffer with a negative stride");
            span += (int64_t)(d.extent - 1) * d.stride;
        }
        bytes.assign((size_t)(span * element_bytes), 0);
        buffer.host = bytes.data();
    }

    // Calls f(dense index, staging byte offset) for every element, dimension 0 fastest.
    template<typename F>
    void for_each(F &&f) const {
        const int rank = (int)dims.size();
        std::vector<int64_t> x(rank, 0);
        int64_t total = 1;
        for (const auto &d : dims) total *= d.extent;
        for (int64_t i = 0; i < total; i++) {
            int64_t offset = 0;
            for (int d = 0; d < rank; d++) offset += x[d] * dims[d].stride;
            f(i, offset * element_bytes);
            for (int d = 0; d < rank && ++x[d] == dims[d].extent; d++) x[d] = 0;
        }
    }
};

}  // namespace

extern "C" int spyre_device_read_values(void *user_context, const halide_buffer_t *buf, void *dense) {
    return guarded(user_context, "spyre_device_read_values", [&] {
        if (!buf || !dense) throw RuntimeError(spyre_error_bad_argument, "spyre_device_read_values: null argument");
        Staging staging(buf);
        staging.buffer.flags = 0;
        staging.buffer.set_device_dirty(true);
        {
            UnchargedTransfers uncharged;
            if (int r = spyre_device_interface()->copy_to_host(user_context, &staging.buffer)) return r;
        }
        uint8_t *out = static_cast<uint8_t *>(dense);
        staging.for_each([&](int64_t i, int64_t offset) {
            std::memcpy(out + i * staging.element_bytes, staging.bytes.data() + offset, (size_t)staging.element_bytes);
        });
        return 0;
    });
}

extern "C" int spyre_device_write_values(void *user_context, halide_buffer_t *buf, const void *dense) {
    return guarded(user_context, "spyre_device_write_values", [&] {
        if (!buf || !dense) throw RuntimeError(spyre_error_bad_argument, "spyre_device_write_values: null argument");
        Staging staging(buf);
        const uint8_t *in = static_cast<const uint8_t *>(dense);
        staging.for_each([&](int64_t i, int64_t offset) {
            std::memcpy(staging.bytes.data() + offset, in + i * staging.element_bytes, (size_t)staging.element_bytes);
        });
        staging.buffer.flags = 0;
        staging.buffer.set_host_dirty(true);
        UnchargedTransfers uncharged;
        return spyre_device_interface()->copy_to_device(user_context, &staging.buffer, spyre_device_interface());
    });
}

extern "C" double spyre_simulated_clock_us(void) {
    StatsRegistry &reg = stats_registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    double total = 0;
    for (const auto &entry : reg.kernels) total += entry.second.sums.simulated_us;
    return total;
}

extern "C" int spyre_profile_record(const char *entry, uint64_t bytes_read, uint64_t bytes_written, double us,
                                    const char *bottleneck) {
    if (!entry || !*entry || !(us >= 0)) {
        set_last_error("spyre_profile_record: needs an entry name and a time >= 0");
        return spyre_error_bad_argument;
    }
    record_profile_entry(entry, (int64_t)bytes_read, (int64_t)bytes_written, us, bottleneck ? bottleneck : "");
    return 0;
}
