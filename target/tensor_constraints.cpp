// The registry of constrained tensors and the stick width (see tensor_constraints.h).
#include "tensor_constraints.h"

#include <cstdint>
#include <string>

#include "spyre/machine.h"

namespace spyre {
namespace {

std::map<std::string, SpyreTensorInfo> &registry() {
    static std::map<std::string, SpyreTensorInfo> tensors;
    return tensors;
}

}  // namespace

void register_tensor(const SpyreTensorInfo &info) {
    // Halide 14 buffers index with 32-bit integers. The generators check their shape parameters
    // first (generators/shape_limits.h); this catches what the padding to the plan's tiles adds.
    int64_t elements = 1;
    std::string extents, padded;
    for (size_t d = 0; d < info.padded.size(); d++) {
        if (elements <= 2147483647) elements *= info.padded[d];  // stays below 2^63
        extents += (d ? " x " : "") + std::to_string(info.extents[d]);
        padded += (d ? " x " : "") + std::to_string(info.padded[d]);
    }
    _halide_user_assert(elements <= 2147483647)
        << "tensor '" << info.name << "' (" << extents << ") is too large: padded for the Spyre layout to " << padded
        << " it would hold more than the 2147483647 (2^31 - 1) elements a Halide 14 buffer can index";
    registry()[info.name] = info;
}

bool set_tensor_order(const std::string &name, const std::vector<int> &order) {
    auto it = registry().find(name);
    if (it == registry().end()) return false;
    it->second.order = order;
    return true;
}

const SpyreTensorInfo *find_tensor(const std::string &name) {
    auto it = registry().find(name);
    return it == registry().end() ? nullptr : &it->second;
}

std::map<std::string, SpyreTensorInfo> snapshot_tensor_registry() { return registry(); }

void clear_tensor_registry() {
    registry().clear();
}

int stick_lanes(const Halide::Type &t) {
    return (int)(default_machine().stick_bytes / t.bytes());
}

}  // namespace spyre
