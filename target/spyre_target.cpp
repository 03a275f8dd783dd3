// The process-wide "compiling for Spyre" flag and driver options (see spyre_target.h).
#include "spyre_target.h"

namespace spyre {
namespace {

// One generator process compiles for one kind of target, so plain globals
// suffice; they are set by the driver (or a JIT test) before any schedule runs.
bool g_compiling_for_spyre = false;

DriverOptions &mutable_driver_options() {
    static DriverOptions options;
    return options;
}

}  // namespace

bool is_spyre() {
    return g_compiling_for_spyre;
}

void set_compiling_for_spyre(bool on) {
    g_compiling_for_spyre = on;
}

const DriverOptions &driver_options() {
    return mutable_driver_options();
}

void set_driver_options(const DriverOptions &o) {
    mutable_driver_options() = o;
}

int padded_extent(int extent, int multiple) {
    if (!is_spyre() || multiple <= 1) return extent;
    return (extent + multiple - 1) / multiple * multiple;
}

Halide::Target host_reference_target() {
    Halide::Target t = Halide::get_host_target();
    if (t.has_feature(Halide::Target::AVX512_SapphireRapids)) t = t.without_feature(Halide::Target::AVX512_SapphireRapids);
    return t;
}

}  // namespace spyre
