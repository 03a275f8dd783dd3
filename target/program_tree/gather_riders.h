// Gather riders: a gathered ring share's rounds run in step on every core of its
// chain (each round waits for the share its upstream forwarded the round
// before), and a core's DMA queue is in order, so the plain loads a core issues
// ahead of its share's load are issued by every core at the same moment and
// its forwards after them too: while the chain forwards, no core reads DRAM,
// and the card idles. gen_matmul m=2048 n=512 k=4096 with B gathered round all
// 32 cores (64 x 512 tiles, 128-deep K chunks): each core's A chunk (16 KB)
// then its B share (4 KB) with the 32 cores at once, then 31 forwards of 4 KB
// (0.8 us) with the DRAM idle: 33.6 of 193.9 us. A core whose plain loads are
// issued after its p-th forward instead (p its position in the chain) reads
// DRAM while the others forward, and the cores' reads spread over the rounds:
// 166.3 us, the DRAM idle 0.1 us, 17-32 cores reading at once.
//
// The pass marks, on each gathered load at a position p > 0 of its chain, how
// many of the plain DMA loads just before it in its body ride in its rounds
// (RingShare::riders): consecutive loads, not shared over the ring, whose
// scratchpad bytes (over all iterations) are disjoint from the gathered tile's,
// and whose first reader among the siblings after the tile (the first that
// touches its bytes) is not before the tile's own (a matmul reading both). A load read earlier stays: a whole-K
// tile's bias row, which the SFU widens into the accumulator before the matmul,
// delayed by the rounds, held up the matmul (the Granite o projection with a
// residual at 2 cards, m=512 n=4096 k=2048 with 8-core B chains: 215.5 ->
// 218.8 us with the bias row riding).
// Stream emission (emission/core_streams.h) moves each rider that no token
// separates from the gathered load (a signal after it would tell another unit
// it had landed) to after the core's p-th forward; a rider it cannot move stops
// the riders before it. Loads only move later in the DMA queue, so every wait
// before them still precedes them, and their readers wait for the tokens after
// the rounds as before.
//
// Expects every core's tree after ring sharing and the passes that move loads
// after it (the last tree before stream emission); guarantees the same
// results. Returns how many loads were marked as riders.
#pragma once

#include <vector>

#include "program_tree/program_tree.h"

namespace spyre {
namespace compiler {

int mark_gather_riders(std::vector<ProgramNode> &tree);

}  // namespace compiler
}  // namespace spyre
