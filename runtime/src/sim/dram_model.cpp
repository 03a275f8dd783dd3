// The fluid, fairly shared DRAM model (see dram_model.h).
#include "sim/dram_model.h"

#include <algorithm>
#include <limits>

namespace spyre {
namespace sim {

namespace {
constexpr double kEpsilon = 1e-6;  // card-cycles; far above the rounding of the sums involved
}

DramModel::DramModel(const MachineDescription &m) : m_(m) {}

int DramModel::start(double now, int64_t read_bytes, int64_t write_bytes) {
    advance(now);
    const double bytes = (double)read_bytes + (double)write_bytes;
    const double before = std::min(total_read_, total_write_);
    total_read_ += read_bytes;
    total_write_ += write_bytes;
    const double turnaround = (std::min(total_read_, total_write_) - before) * m_.dram_turnaround_ns_per_byte * m_.clock_ghz;
    Transfer t;
    t.id = next_id_++;
    t.work = bytes / m_.dram_bytes_per_cycle() + turnaround;
    // The port moves at most dma_port_bytes_per_cycle real bytes per cycle.
    t.cap = bytes > 0 ? m_.dma_port_bytes_per_cycle() * t.work / bytes : 1.0;
    active_.push_back(t);
    recompute_rates();
    return t.id;
}

void DramModel::advance(double now) {
    const double dt = now - now_;
    if (dt > 0) {
        for (Transfer &t : active_) t.work -= t.rate * dt;
    }
    now_ = std::max(now_, now);
}

void DramModel::recompute_rates() {
    // Common case: nobody is held by its port at an equal share.
    if (active_.empty()) return;
    const double equal = 1.0 / (double)active_.size();
    bool all_above = true;
    for (const Transfer &t : active_) all_above = all_above && t.cap >= equal;
    if (all_above) {
        for (Transfer &t : active_) t.rate = equal;
        return;
    }
    // Water-filling: the card serves one card-cycle per cycle, split equally,
    // each transfer at most its cap; what a capped transfer leaves goes to the others.
    order_.clear();
    for (Transfer &t : active_) order_.push_back(&t);
    std::sort(order_.begin(), order_.end(), [](const Transfer *a, const Transfer *b) { return a->cap < b->cap; });
    double capacity = 1.0;
    size_t left = order_.size();
    for (Transfer *t : order_) {
        const double share = capacity / (double)left;
        t->rate = std::min(t->cap, share);
        capacity -= t->rate;
        left--;
    }
}

double DramModel::next_completion() const {
    double best = std::numeric_limits<double>::infinity();
    for (const Transfer &t : active_) {
        if (t.rate > 0) best = std::min(best, now_ + std::max(0.0, t.work) / t.rate);
    }
    return best;
}

std::vector<int> DramModel::complete_until(double now) {
    advance(now);
    std::vector<int> done;
    for (auto it = active_.begin(); it != active_.end();) {
        if (it->work <= kEpsilon) {
            done.push_back(it->id);
            it = active_.erase(it);
        } else {
            ++it;
        }
    }
    if (!done.empty()) recompute_rates();
    return done;
}

}  // namespace sim
}  // namespace spyre
