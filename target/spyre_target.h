// How a generator learns it is being compiled for Spyre, and what the
// generator driver tells the compiler (output directory, function name).
//
// Halide 14's Target cannot name a new device, so our generator driver
// (generator_main.cpp) strips the `spyre` token from -target/target= and maps
// it to a fixed baseline host target; it records here that this run is for
// Spyre. JIT users (tests) set it directly.
#pragma once

#include <string>

#include "Halide.h"

namespace spyre {

// True while compiling for -target=spyre (or host-spyre...). Schedules branch on it.
bool is_spyre();
void set_compiling_for_spyre(bool on);

struct DriverOptions {
    std::string output_dir;     // GenGen's -o
    std::string function_name;  // GenGen's -f (without namespaces), or the generator name
    std::string generator_name; // GenGen's -g
};
const DriverOptions &driver_options();
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
