// Ring sharing of staged tiles (requested per Func with spyre::share_over_ring
// in schedules/spyre_schedule.h).
//
// When several cores load the very same tile of an input (for example the A
// tile of a matmul whose cores are split along N), DRAM is read once per
// chain of cores instead of once per core. This pass looks at every core's
// DMA loads of a shared Func: cores whose loads of it are identical (same
// DRAM bytes, same scratchpad placement, same loops around them) and whose
// programs have the same shape (the same loops and instructions in the same
// order, so tiles and tokens pair up) form a chain in core order, or, for a
// Func forwarded in pieces, in the reverse order where that loads the
// busiest ring link less (a ring.put takes
// the shorter way round, and a Func's chains travel at the same time: chains
// that interleave, like a conv's weight chains when its cores split the
// channels fastest, then use both directions; 256 -> 256 channels at 56 x 56,
// batch 1: 81.3 -> 78.3 us). The first core of a chain keeps its loads; every later
// core receives each tile from its predecessor over the ring, and every core
// but the last forwards it to its successor. The protocol, per tile:
//   receiver: ring.put 0 bytes -> upstream (credit: my copy of the buffer is free)
//             wait data channel (the tile has arrived)
//   sender:   wait credit channel, ring.put tile -> downstream (data channel)
// The credit is sent where the load used to be issued, i.e. after this core's
// own units released the buffer (the usual in-core synchronization), so a
// sender never overwrites a tile its successor still reads; with double
// buffering the next tile travels while the current one is computed.
// A Func requested in pieces (share_over_ring(f, RingForwarding::Pieces))
// travels in pieces (ring_forward_pieces): the sender puts each piece on the
// data channel, and a middle core forwards a piece as soon as it has arrived
// (one wait per piece), so a chain of n cores receives a tile of P pieces in
// about (n - 1 + P - 1) piece times rather than (n - 1) tile times.
//
// Expects every core's tree after loop folding and double buffering (the
// scratchpad addresses are final); marks the loads (ProgramNode RingShare)
// that stream emission expands. Throws CompileError naming the Func when it
// is not loaded by DMA, when no two cores load the same tile, when its tile
// is not contiguous in the scratchpad, when the kernel also writes its tensor
// (a receiver would read it at the first core's time), or when more than
// kMaxSharedFuncs Funcs are shared.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "program_tree/program_tree.h"
#include "spyre/machine.h"

namespace spyre {
namespace compiler {

// Token channels: shared Func i uses kUnitPairChannels + 2i (data) and + 2i + 1 (credits).
constexpr int kMaxSharedFuncs = 3;

// The sizes of the pieces a shared tile of `bytes` bytes travels the ring in
// when it is forwarded in pieces: whole sticks, kRingPieceSticks of them (the
// last piece the rest), one piece when the tile is no larger; {bytes} when it
// travels whole. A piece costs a put and a wait per core and a hop latency per
// link; pieces of 8 sticks (1 KiB) cross a link in about 5 ns, its hop latency.
// A chain fills in (cores - 1) piece hops, so a long chain wants small pieces:
// the weights of a 3x3 conv of 64 channels at 56 x 56 pass down 28 cores,
// 10.09 us with pieces of 32 sticks, 9.90 us with 8 (16: 9.91, 4: 9.89); the
// 256-channel layer at batch 1, whose input chains are 4 cores long, took
// 81.0, 81.3, 87.0 and 81.4 us.
constexpr int64_t kRingPieceSticks = 8;
std::vector<int64_t> ring_forward_pieces(int64_t bytes, bool in_pieces, const MachineDescription &m);

// trees[c] is core c's program tree (c < number of cores the kernel uses);
// the Funcs of `in_pieces` (a subset of `funcs`) travel in pieces.
void share_loads_over_ring(std::vector<std::vector<ProgramNode> *> &trees, const std::set<std::string> &funcs,
                           const std::set<std::string> &in_pieces, const MachineDescription &m);

}  // namespace compiler
}  // namespace spyre
