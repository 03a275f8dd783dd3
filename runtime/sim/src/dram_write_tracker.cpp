// Cross-core DRAM write races (see dram_write_tracker.h).
#include "dram_write_tracker.h"

#include <algorithm>
#include <string>

#include "scratchpad.h"

namespace spyre {
namespace sim {

void DramWriteTracker::next_epoch() {
    if (!any_) return;
    for (auto &runs : written_) runs.clear();
    any_ = false;
}

void DramWriteTracker::store(int arg, int core, int64_t pc, const ByteBox &box, const char *arg_name) {
    if (box.len <= 0 || box.rows <= 0 || box.planes <= 0) return;
    any_ = true;
    auto &runs = written_[arg];
    const bool rows_contiguous = box.rows == 1 || box.row_stride == box.len;
    const bool planes_contiguous = box.planes == 1 || box.plane_stride == box.rows * box.len;
    if (rows_contiguous && planes_contiguous) {
        store_run(runs, box.base, box.base + box.len * box.rows * box.planes, core, pc, arg_name);
        return;
    }
    for (int64_t p = 0; p < box.planes; p++) {
        for (int64_t r = 0; r < box.rows; r++) {
            const int64_t at = box.base + p * box.plane_stride + r * box.row_stride;
            store_run(runs, at, at + box.len, core, pc, arg_name);
        }
    }
}

void DramWriteTracker::store_run(std::map<int64_t, Run> &runs, int64_t begin, int64_t end, int core, int64_t pc,
                                 const char *arg_name) {
    auto it = runs.upper_bound(begin);
    // Fast path: the run before extends this core's writes of the same instruction and meets no other.
    if (it != runs.begin()) {
        Run &prev = std::prev(it)->second;
        if (prev.core == core && prev.pc == pc && prev.end >= begin && (it == runs.end() || it->first > end)) {
            prev.end = std::max(prev.end, end);
            return;
        }
    }
    // The runs (disjoint, ordered) overlapping [begin, end).
    if (it != runs.begin() && std::prev(it)->second.end > begin) --it;
    for (auto j = it; j != runs.end() && j->first < end; ++j) {
        if (j->second.core == core) continue;
        const int64_t lo = std::max(begin, j->first), hi = std::min(end, j->second.end);
        throw RuleViolation("dma.store writes bytes [" + std::to_string(lo) + ", " + std::to_string(hi) + ") of '" +
                            arg_name + "' in DRAM that core " + std::to_string(j->second.core) + " (dma instruction " +
                            std::to_string(j->second.pc) +
                            ") also writes, with no ring transfer or barrier between the two: a race between two cores "
                            "(which bytes win depends on timing)");
    }
    // This core's overlapped runs keep what lies outside [begin, end); the new run takes the rest.
    while (it != runs.end() && it->first < end) {
        const int64_t b = it->first;
        const Run r = it->second;
        it = runs.erase(it);
        if (b < begin) runs.emplace(b, Run{begin, r.core, r.pc});
        if (r.end > end) it = runs.emplace(end, Run{r.end, r.core, r.pc}).first;
    }
    // Merge with neighbours of the same core and instruction that touch it.
    int64_t new_begin = begin, new_end = end;
    auto right = runs.find(end);
    if (right != runs.end() && right->second.core == core && right->second.pc == pc) {
        new_end = right->second.end;
        runs.erase(right);
    }
    auto left = runs.lower_bound(begin);
    if (left != runs.begin()) {
        --left;
        if (left->second.end == begin && left->second.core == core && left->second.pc == pc) {
            left->second.end = new_end;
            return;
        }
    }
    runs.emplace(new_begin, Run{new_end, core, pc});
}

}  // namespace sim
}  // namespace spyre
