// The card-to-card link model (spyre/card_link.h): a hop's cost from the
// machine description, the algorithms' formulas, the choice between them by
// message size, and nccl-tests' bus-bandwidth factors.
#include <gtest/gtest.h>

#include "spyre/card_link.h"
#include "spyre/machine.h"

namespace {

using spyre::Collective;
using spyre::collective_cost;

spyre::MachineDescription machine(double latency_us, int peer_to_peer) {
    spyre::MachineDescription m = spyre::load_machine_from_environment();
    m.card_link_latency_us = latency_us;
    m.card_link_peer_to_peer = peer_to_peer;
    return m;
}

TEST(CardLink, AHopIsTheLatencyPlusTheBytesOverThePcieLinkTwiceWhenHostStaged) {
    const spyre::MachineDescription staged = machine(5, 0), direct = machine(5, 1);
    const double bytes = 1e6, crossing_us = bytes / (staged.host_link_gbps * 1e3);
    EXPECT_DOUBLE_EQ(spyre::card_hop_us(staged, bytes), 5 + 2 * crossing_us);
    EXPECT_DOUBLE_EQ(spyre::card_hop_us(direct, bytes), 5 + crossing_us);
    EXPECT_DOUBLE_EQ(spyre::card_hop_us(staged, 0), 5);
}

TEST(CardLink, OneRankCostsNothing) {
    const spyre::CollectiveCost c = collective_cost(machine(5, 0), Collective::AllReduce, 1, 1e9);
    EXPECT_EQ(c.us, 0);
    EXPECT_EQ(c.algorithm, "none");
}

TEST(CardLink, AllReduceTakesFewLatenciesForSmallMessagesAndTheRingForLargeOnes) {
    const spyre::MachineDescription m = machine(5, 0);
    const spyre::CollectiveCost small = collective_cost(m, Collective::AllReduce, 8, 64);
    EXPECT_EQ(small.algorithm, "recursive doubling");
    EXPECT_DOUBLE_EQ(small.us, 3 * spyre::card_hop_us(m, 64));
    const spyre::CollectiveCost large = collective_cost(m, Collective::AllReduce, 8, 64e6);
    EXPECT_EQ(large.algorithm, "ring");
    EXPECT_DOUBLE_EQ(large.us, 14 * spyre::card_hop_us(m, 8e6));
    EXPECT_EQ(large.messages, 14);
}

TEST(CardLink, EveryCollectiveIsNeverSlowerThanEitherOfItsAlgorithms) {
    const spyre::MachineDescription m = machine(2, 0);
    for (int p : {2, 3, 4, 5, 8}) {
        for (double bytes : {8.0, 4096.0, 1e6, 256e6}) {
            const double ring = 2 * (p - 1) * spyre::card_hop_us(m, bytes / p);
            EXPECT_LE(collective_cost(m, Collective::AllReduce, p, bytes).us, ring + 1e-9);
            EXPECT_LE(collective_cost(m, Collective::ReduceScatter, p, bytes).us,
                      (p - 1) * spyre::card_hop_us(m, bytes / p) + 1e-9);
            EXPECT_LE(collective_cost(m, Collective::AllGather, p, bytes).us, (p - 1) * spyre::card_hop_us(m, bytes) + 1e-9);
            EXPECT_GT(collective_cost(m, Collective::Broadcast, p, bytes).us, 0);
        }
    }
    EXPECT_DOUBLE_EQ(collective_cost(m, Collective::SendRecv, 2, 1000).us, spyre::card_hop_us(m, 1000));
}

TEST(CardLink, BusBandwidthFactorsFollowNcclTests) {
    EXPECT_DOUBLE_EQ(spyre::bus_bandwidth_factor(Collective::AllReduce, 4), 1.5);
    EXPECT_DOUBLE_EQ(spyre::bus_bandwidth_factor(Collective::AllGather, 4), 0.75);
    EXPECT_DOUBLE_EQ(spyre::bus_bandwidth_factor(Collective::ReduceScatter, 8), 0.875);
    EXPECT_DOUBLE_EQ(spyre::bus_bandwidth_factor(Collective::Broadcast, 8), 1.0);
}

}  // namespace
