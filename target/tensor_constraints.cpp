// The registry of constrained tensors and the stick width (see tensor_constraints.h).
#include "tensor_constraints.h"

#include "spyre/machine.h"

namespace spyre {
namespace {

std::map<std::string, SpyreTensorInfo> &registry() {
    static std::map<std::string, SpyreTensorInfo> tensors;
    return tensors;
}

}  // namespace

void register_tensor(const SpyreTensorInfo &info) {
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
