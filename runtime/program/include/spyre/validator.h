// Semantic validation of a decoded program against a machine description.
// Rejects (spyre::Error naming the file offset, core, unit, instruction and the
// problem): a program built for another machine, wrong core count, bad argument
// tables and layouts, instructions in the wrong unit's stream, out-of-range
// fields, unbalanced or too deep hardware loops, trip counts over the machine
// limit, loop strides that name loops which are not open, references to
// missing arguments or parameters, integer types on float-only ops, and
// streams whose dynamic instruction count exceeds the simulation limit (so a
// hostile program cannot hang the simulator).
//
// Hardware rules that depend on addresses (whole sticks, scratchpad and DRAM
// bounds, uninitialised reads, deadlock) are checked when the program runs.
#pragma once

#include <cstdint>

#include "spyre/machine.h"
#include "spyre/program.h"

namespace spyre {

struct ValidationLimits {
    // Upper bound on instructions executed by one unit stream (loops expanded).
    uint64_t max_dynamic_instructions_per_stream = uint64_t(1) << 32;
};

void validate_program(const Program &p, const MachineDescription &m, const ValidationLimits &limits = {});

}  // namespace spyre
