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
// A Func requested gathered (RingForwarding::Gathered) travels a closed chain:
// core p of a chain of n loads share p of each tile itself (rows, or planes
// when the tile has several, cut as evenly as whole ones allow) and forwards
// the shares round the chain, so every core reads DRAM at once instead of the
// first core alone, and no core's DMA queue holds a whole tile's load ahead of
// its forwards. Per tile, core p:
//             ring.put 0 bytes -> upstream (credit), dma.load share p,
//             wait credit channel, ring.put share p -> downstream,
//             n - 2 times: wait data channel, ring.put the share that arrived -> downstream,
//             wait data channel (the last share).
// (The plain loads just before a share may be issued among those forwards instead:
// gather_riders.h, a later pass.)
// A 2-D matmul's B chains (cores along M, 4 apart x 8 chains at M = 512 on
// 32 cores) are the case it is for: their heads' loads at a quarter of the
// card set the pace of the whole kernel (docs/planning.md).
//
// Expects every core's tree after loop folding and double buffering (the
// scratchpad addresses are final); marks the loads (ProgramNode RingShare)
// that stream emission expands. Throws CompileError naming the Func when it
// is not loaded by DMA, when no two cores load the same tile, when its tile
// is not contiguous in the scratchpad, when the kernel also writes its tensor
// (a receiver would read it at the first core's time), or when more than
// kMaxSharedFuncs Funcs are shared; for a gathered Func also when a tile has
// fewer rows (or planes) than its chain has cores, or its partial rows or
// planes depend on the loops.
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
// the Funcs of `in_pieces` (a subset of `funcs`) travel in pieces, those of
// `gathered` (another subset) are loaded in shares.
void share_loads_over_ring(std::vector<std::vector<ProgramNode> *> &trees, const std::set<std::string> &funcs,
                           const std::set<std::string> &in_pieces, const MachineDescription &m,
                           const std::set<std::string> &gathered = {});

// How a gathered tile is cut into shares: along its planes when it has several,
// else along its rows, else (one row) along its sticks. The fields are DmaLoad's
// (the count, the valid count, the DRAM and scratchpad strides; -1: a stick).
struct GatherCut {
    int count_field, valid_field, dram_stride_field, sp_stride_field;
    int64_t units, unit_bytes;
    const char *unit_name;
};
GatherCut gather_cut(int64_t planes, int64_t rows, int64_t row_bytes, int64_t stick_bytes);

// A gathered tile's share `share` of `shares`: its first unit and how many.
struct GatheredShare {
    int64_t first = 0, count = 0;
};
GatheredShare gathered_share(int64_t units, int share, int shares);

// The load of share `share` of `shares` of a gathered tile (`load` loads it whole): its units
// (gather_cut) from the share's first one, its valid ones counted from there.
isa::Instruction gathered_share_load(const isa::Instruction &load, int share, int shares, int64_t stick_bytes);

}  // namespace compiler
}  // namespace spyre
