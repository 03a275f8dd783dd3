// First-fit scratchpad placement (see scratchpad_plan.h).
#include "selection/scratchpad_plan.h"

#include <algorithm>

namespace spyre {
namespace compiler {

int64_t ScratchpadPlan::allocate(const std::string &name, int64_t bytes) {
    bytes = std::max<int64_t>(alignment_, (bytes + alignment_ - 1) / alignment_ * alignment_);
    std::vector<std::pair<int64_t, int64_t>> used;
    for (const auto &kv : live_) used.push_back(kv.second);
    std::sort(used.begin(), used.end());
    int64_t addr = 0;
    for (const auto &u : used) {
        if (addr + bytes <= u.first) break;
        addr = std::max(addr, u.first + u.second);
    }
    live_[name] = {addr, bytes};
    placements_.push_back({name, addr, bytes});
    note_peak();
    return addr;
}

void ScratchpadPlan::note_peak() {
    int64_t end = 0;
    for (const auto &kv : live_) end = std::max(end, kv.second.first + kv.second.second);
    if (end <= peak_) return;
    peak_ = end;
    peak_description_.clear();
    for (const auto &kv : live_) {
        if (!peak_description_.empty()) peak_description_ += ", ";
        peak_description_ += kv.first + " (" + std::to_string(kv.second.second) + " B at " + std::to_string(kv.second.first) + ")";
    }
}

int64_t ScratchpadPlan::allocate_above_peak(const std::string &name, int64_t bytes) {
    bytes = std::max<int64_t>(alignment_, (bytes + alignment_ - 1) / alignment_ * alignment_);
    int64_t addr = (peak_ + alignment_ - 1) / alignment_ * alignment_;
    for (const auto &kv : live_) addr = std::max(addr, kv.second.first + kv.second.second);
    live_[name] = {addr, bytes};
    placements_.push_back({name, addr, bytes});
    note_peak();
    return addr;
}

void ScratchpadPlan::release(const std::string &name) { live_.erase(name); }

}  // namespace compiler
}  // namespace spyre
