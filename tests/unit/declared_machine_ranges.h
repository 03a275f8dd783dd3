// The allowed range of every machine parameter, as machine_params.def
// declares it: the table the machine tests check the loader against.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "spyre/machine.h"

namespace spyre::testing {

struct DeclaredRange {
    std::string name;
    bool integral;
    double min, max;
};

inline std::vector<DeclaredRange> declared_ranges() {
    return {
#define SPYRE_MACHINE_PARAM(pname, type, min, max) {#pname, std::is_integral_v<type>, (double)(min), (double)(max)},
#include "spyre/machine_params.def"
#undef SPYRE_MACHINE_PARAM
    };
}

}  // namespace spyre::testing
