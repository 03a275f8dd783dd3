// How a generator learns it is being compiled for Spyre, and what the
// generator driver tells the compiler (output directory, function name).
//
// Halide 14's Target cannot name a new device, so our generator driver
// (generator_main.cpp) strips the `spyre` token from -target/target= and maps
// it to a fixed baseline host target; the run's ScheduleContext (schedule_context.h)
// records that it is for Spyre. JIT users make their own context, or set the
// target of the thread's active one with set_compiling_for_spyre.
#pragma once

#include <string>

#include "Halide.h"
#include "schedule_context.h"

namespace spyre {

// True when the active schedule context compiles for Spyre (-target=spyre). Schedules branch on it.
bool is_spyre();
// Sets the target of the active schedule context (ScheduleContext::active().set_for_spyre).
void set_compiling_for_spyre(bool on);

// The generator driver's options (DriverOptions, schedule_context.h) of the active schedule context.
DriverOptions driver_options();
void set_driver_options(const DriverOptions &o);

// The target host builds (the references Spyre results are compared with) use:
// Halide::get_host_target() without AVX512_SapphireRapids. Halide 14 reports
// that feature on AMD Zen 4 CPUs, which lack AVX512-FP16, and float16 code then
// dies with SIGILL. The generator driver maps `host` to this; JIT tests use it.
Halide::Target host_reference_target();

// Rounds `extent` up to a multiple of `multiple` when compiling for Spyre;
// returns it unchanged for host builds.
int padded_extent(int extent, int multiple);

}  // namespace spyre
