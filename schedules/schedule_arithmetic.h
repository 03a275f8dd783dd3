// Small integer helpers every Spyre schedule planner uses (tile rounding, even
// divisors for static core splits). Header-only; no Halide dependency.
#pragma once

#include <vector>

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

}  // namespace spyre
