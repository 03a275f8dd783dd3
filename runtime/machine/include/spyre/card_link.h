// The card-to-card link model: the simulated time of a collective among
// several Spyre cards (one per MPI rank, spyre_collectives.h), from the
// machine description alone.
//
// A hop moves a message from one card to another over the cards' PCIe links
// (host_link_gbps per direction, the same link host<->device copies use):
// host-staged (card_link_peer_to_peer = 0) it crosses PCIe twice, card to
// host memory then host memory to card; peer-to-peer once. Each message also
// pays card_link_latency_us. Every card has one link, so a card sending to
// several peers sends one message after another:
//   hop_us(bytes) = card_link_latency_us + crossings x bytes / host_link_gbps
// The algorithms (P ranks, N bytes per rank's buffer):
//   all_reduce     ring:  2(P-1) hops of N/P      recursive doubling: ceil(log2 P) hops of N
//   all_gather     ring:  (P-1) hops of N          recursive doubling: hops of N, 2N, 4N, ...
//                  (N here is each rank's piece; the result holds P N bytes)
//   reduce_scatter ring:  (P-1) hops of N/P       recursive halving: hops of N/2, N/4, ... (P a power of 2)
//   broadcast      tree:  ceil(log2 P) hops of N  scatter + ring all_gather: log2 P hops of N/P.. + (P-1) hops of N/P
//   send / recv    one hop of N
// and each collective takes the cheaper of its two (the same cost decides,
// as a collective library chooses by message size). The reduction's own
// arithmetic is not charged (it runs at the card's vector rate, far above
// the link's). One rank (P = 1) costs nothing.
#pragma once

#include <cstdint>
#include <string>

#include "spyre/machine.h"

namespace spyre {

enum class Collective { AllReduce, AllGather, ReduceScatter, Broadcast, SendRecv };
const char *collective_name(Collective c);  // "all_reduce", ...

struct CollectiveCost {
    double us = 0;
    std::string algorithm;  // "ring", "recursive doubling", "tree", ... ("none" for one rank)
    int messages = 0;       // messages on the critical path
};

// One message of `bytes` between two cards.
double card_hop_us(const MachineDescription &m, double bytes);

// The simulated time of collective `c` among `ranks` cards; `bytes` is the
// size of one rank's input (all_gather: one rank's piece; reduce_scatter:
// the whole input each rank holds; broadcast and send: the message).
CollectiveCost collective_cost(const MachineDescription &m, Collective c, int ranks, double bytes);

// nccl-tests' bus-bandwidth factor: bus bandwidth = algorithm bandwidth x this
// (all_reduce 2(P-1)/P, all_gather and reduce_scatter (P-1)/P, others 1).
double bus_bandwidth_factor(Collective c, int ranks);

}  // namespace spyre
