// How well an estimate ranks candidates as the simulator does: among the pairs
// whose simulated times differ by more than 5%, how many the estimate orders
// the same way. Shared by the planners' ranking tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace spyre::testing {

struct PairAgreement {
    int agree = 0;
    int pairs = 0;
};

// `Run` has simulated_us and estimated_us.
template <typename Run>
PairAgreement ordered_pairs(const std::vector<Run> &runs) {
    PairAgreement out;
    for (size_t i = 0; i < runs.size(); i++) {
        for (size_t j = i + 1; j < runs.size(); j++) {
            const double a = runs[i].simulated_us, b = runs[j].simulated_us;
            if (std::fabs(a - b) <= 0.05 * std::min(a, b)) continue;
            out.pairs++;
            if ((runs[i].estimated_us < runs[j].estimated_us) == (a < b)) out.agree++;
        }
    }
    return out;
}

}  // namespace spyre::testing
