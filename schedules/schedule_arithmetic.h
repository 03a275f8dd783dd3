// Small integer helpers every Spyre schedule planner uses (tile rounding, even
// divisors for static core splits, the core limit of a max_cores knob, the
// candidate core counts of the autoscheduler, the planners' SFU vector limit).
// Machine numbers come from scheduling_machine() (the active schedule context's machine), never from here.
// Header-only; no Halide dependency.
#pragma once

#include <algorithm>
#include <vector>

#include "schedule_context.h"
#include "spyre/machine.h"

namespace spyre {

// The smallest multiple of `multiple` that is >= x.
inline int round_up(int x, int multiple) { return (x + multiple - 1) / multiple * multiple; }

// Every d with x % d == 0, increasing (the even splits of x units of work).
inline std::vector<int> divisors(int x) {
    std::vector<int> out;
    for (int d = 1; d <= x; d++) {
        if (x % d == 0) out.push_back(d);
    }
    return out;
}

// The cores a plan may use: the max_cores knob, clamped to 1..the machine's cores;
// max_cores = 0 (every family's default) is the machine's core count.
inline int usable_cores(int max_cores) {
    const int cores = (int)scheduling_machine().cores;
    return max_cores == 0 ? cores : std::max(1, std::min(max_cores, cores));
}

// The max_cores values a schedule template offers the autoscheduler: all of the
// machine's cores, half and a quarter of them (distinct, at least 1).
inline std::vector<int> core_count_candidates() {
    std::vector<int> out;
    for (int c : {usable_cores(0), usable_cores(0) / 2, usable_cores(0) / 4}) {
        if (c >= 1 && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    }
    return out;
}

// The longest vector a planner gives one SFU instruction, in lanes: the machine
// description's sfu_max_vector_lanes (E, docs/machine.md; at least one stick of
// any element type). A planner assumption, not an ISA limit: an SFU
// instruction's element count is a 32-bit field (runtime/program/include/spyre/isa.def),
// and neither the validator nor the simulator bounds it. Longer vectors amortize
// the instruction overhead (sfu_instruction_overhead_cycles) over more lanes but
// need longer fp32 row temporaries in the scratchpad and wider vectors in the
// Halide IR; a row longer than this is cut into vectors that divide it (or loops).
inline int sfu_max_vector_lanes() { return (int)scheduling_machine().sfu_max_vector_lanes; }

}  // namespace spyre
