// The ring's link reservations (see ring_model.h).
#include "ring_model.h"

#include <algorithm>
#include <cstdlib>

namespace spyre {
namespace sim {

RingModel::RingModel(const MachineDescription &m)
    : m_(m), n_((int)m.cores), free_cw_(m.cores, 0.0), free_ccw_(m.cores, 0.0) {}

int RingModel::hops(int src, int dst) const {
    const int d = std::abs(src - dst);
    return std::min(d, n_ - d);
}

RingModel::Span RingModel::reserve(double earliest, int src, int dst, int64_t bytes, double scale) {
    const int forward = ((dst - src) % n_ + n_) % n_;  // clockwise distance
    const bool clockwise = forward <= n_ - forward;
    const int h = clockwise ? forward : n_ - forward;
    std::vector<double> &links = clockwise ? free_cw_ : free_ccw_;
    auto link_of = [&](int step) {
        return clockwise ? (src + step) % n_ : ((src - step) % n_ + n_) % n_;
    };
    Span s;
    s.busy = scale * (double)bytes / m_.ring_bytes_per_cycle;
    s.begin = earliest;
    if (bytes > 0) {
        for (int i = 0; i < h; i++) s.begin = std::max(s.begin, links[link_of(i)]);
        for (int i = 0; i < h; i++) links[link_of(i)] = s.begin + s.busy;
    }
    const double latency = scale * std::max(h, 1) * m_.ring_hop_latency_ns * m_.clock_ghz;
    s.end = s.begin + s.busy + latency;
    return s;
}

}  // namespace sim
}  // namespace spyre
