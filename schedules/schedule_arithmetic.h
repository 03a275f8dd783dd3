// Small integer helpers every Spyre schedule planner uses (tile rounding, even
// divisors for static core splits, the core limit of a max_cores knob).
// Header-only; no Halide dependency.
#pragma once

#include <algorithm>
#include <vector>

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

// The cores a plan may use: the max_cores knob, clamped to 1..the machine's cores.
inline int usable_cores(int max_cores) { return std::max(1, std::min(max_cores, (int)default_machine().cores)); }

}  // namespace spyre
