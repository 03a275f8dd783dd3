// Whether the active schedule context compiles for Spyre, and the driver options (see spyre_target.h).
#include "spyre_target.h"

#include <cstdint>

#include "schedule_context.h"

namespace spyre {

bool is_spyre() {
    return ScheduleContext::active().for_spyre();
}

void set_compiling_for_spyre(bool on) {
    ScheduleContext::active().set_for_spyre(on);
}

DriverOptions driver_options() {
    return ScheduleContext::active().driver_options();
}

void set_driver_options(const DriverOptions &o) {
    ScheduleContext::active().set_driver_options(o);
}

int padded_extent(int extent, int multiple) {
    if (!is_spyre() || multiple <= 1) return extent;
    const int64_t padded = ((int64_t)extent + multiple - 1) / multiple * multiple;  // 64 bits: no overflow
    _halide_user_assert(padded <= INT32_MAX) << "Spyre: extent " << extent << " padded to whole multiples of " << multiple
                                              << " is " << padded << ", past the 2^31 - 1 a Halide 14 extent can hold";
    return (int)padded;
}

Halide::Target host_reference_target() {
    Halide::Target t = Halide::get_host_target();
    if (t.has_feature(Halide::Target::AVX512_SapphireRapids)) t = t.without_feature(Halide::Target::AVX512_SapphireRapids);
    return t;
}

}  // namespace spyre
