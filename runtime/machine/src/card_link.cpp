// The card-to-card link model (see card_link.h).
#include "spyre/card_link.h"

#include <algorithm>
#include <cmath>

namespace spyre {

const char *collective_name(Collective c) {
    switch (c) {
    case Collective::AllReduce: return "all_reduce";
    case Collective::AllGather: return "all_gather";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::Broadcast: return "broadcast";
    case Collective::SendRecv: return "send/recv";
    }
    return "?";
}

double card_hop_us(const MachineDescription &m, double bytes) {
    const double crossings = m.card_link_peer_to_peer ? 1.0 : 2.0;
    return m.card_link_latency_us + crossings * bytes / (m.host_link_gbps * 1e3);
}

namespace {

int log2_ceil(int p) {
    int steps = 0;
    while ((1 << steps) < p) steps++;
    return steps;
}

CollectiveCost cheaper(CollectiveCost a, CollectiveCost b) { return b.us < a.us ? b : a; }

}  // namespace

CollectiveCost collective_cost(const MachineDescription &m, Collective c, int ranks, double bytes) {
    if (ranks <= 1) return {0.0, "none", 0};
    const double p = ranks;
    const int steps = log2_ceil(ranks);
    auto hop = [&](double b) { return card_hop_us(m, b); };
    switch (c) {
    case Collective::AllReduce: {
        const CollectiveCost ring{2 * (p - 1) * hop(bytes / p), "ring", 2 * (ranks - 1)};
        const CollectiveCost doubling{steps * hop(bytes), "recursive doubling", steps};
        return cheaper(ring, doubling);
    }
    case Collective::AllGather: {
        const CollectiveCost ring{(p - 1) * hop(bytes), "ring", ranks - 1};
        CollectiveCost doubling{0.0, "recursive doubling", steps};
        for (int s = 0; s < steps; s++) doubling.us += hop(bytes * std::min(std::pow(2.0, s), p - std::pow(2.0, s)));
        return cheaper(ring, doubling);
    }
    case Collective::ReduceScatter: {
        const CollectiveCost ring{(p - 1) * hop(bytes / p), "ring", ranks - 1};
        if ((ranks & (ranks - 1)) != 0) return ring;  // recursive halving needs a power of two
        CollectiveCost halving{0.0, "recursive halving", steps};
        for (int s = 1; s <= steps; s++) halving.us += hop(bytes / std::pow(2.0, s));
        return cheaper(ring, halving);
    }
    case Collective::Broadcast: {
        const CollectiveCost tree{steps * hop(bytes), "tree", steps};
        CollectiveCost scatter_gather{(p - 1) * hop(bytes / p), "scatter + ring all_gather", steps + ranks - 1};
        for (int s = 1; s <= steps; s++) scatter_gather.us += hop(bytes / std::pow(2.0, s));
        return cheaper(tree, scatter_gather);
    }
    case Collective::SendRecv: return {hop(bytes), "direct", 1};
    }
    return {0.0, "none", 0};
}

double bus_bandwidth_factor(Collective c, int ranks) {
    const double p = ranks;
    switch (c) {
    case Collective::AllReduce: return ranks > 1 ? 2 * (p - 1) / p : 0;
    case Collective::AllGather:
    case Collective::ReduceScatter: return ranks > 1 ? (p - 1) / p : 0;
    default: return 1;
    }
}

}  // namespace spyre
