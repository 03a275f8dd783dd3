// The fluid DRAM model with concurrency-dependent throughput (see dram_model.h).
#include "dram_model.h"

#include <algorithm>
#include <limits>

namespace spyre {
namespace sim {

namespace {
// A transfer is done when its remaining work is below the rounding of the
// times involved: an absolute floor, and a relative part so that runs of
// 1e10 cycles and more still finish (doubles hold about 16 digits).
constexpr double kEpsilon = 1e-6;            // card-cycles
constexpr double kRelativeEpsilon = 1e-12;   // of the current time
}

DramModel::DramModel(const MachineDescription &m) : m_(m), per_core_((size_t)std::max<int64_t>(m.cores, 1), 0) {}

int64_t DramModel::start(double now, int core, int64_t read_bytes, int64_t write_bytes) {
    advance(now);
    const double bytes = (double)read_bytes + (double)write_bytes;
    const double before = std::min(total_read_, total_write_);
    total_read_ += read_bytes;
    total_write_ += write_bytes;
    const double turnaround = (std::min(total_read_, total_write_) - before) * m_.dram_turnaround_ns_per_byte * m_.clock_ghz;
    Transfer t;
    t.id = next_id_++;
    t.core = std::clamp<int>(core, 0, (int)per_core_.size() - 1);
    t.work = bytes / m_.dram_bytes_per_cycle() + turnaround;
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
    if (active_.empty()) return;
    std::fill(per_core_.begin(), per_core_.end(), 0);
    int cores = 0;
    for (const Transfer &t : active_) {
        if (per_core_[t.core]++ == 0) cores++;
    }
    // The card's work per cycle at this concurrency, shared equally by the
    // active cores, each core's share equally by its transfers.
    const double per_core = m_.dram_concurrency_efficiency(cores) / cores;
    for (Transfer &t : active_) t.rate = per_core / per_core_[t.core];
}

double DramModel::next_completion() const {
    double best = std::numeric_limits<double>::infinity();
    for (const Transfer &t : active_) {
        if (t.rate > 0) best = std::min(best, now_ + std::max(0.0, t.work) / t.rate);
    }
    return best;
}

std::vector<int64_t> DramModel::complete_until(double now) {
    advance(now);
    std::vector<int64_t> done;
    const double epsilon = std::max(kEpsilon, kRelativeEpsilon * now_);
    for (auto it = active_.begin(); it != active_.end();) {
        if (it->work <= epsilon) {
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
