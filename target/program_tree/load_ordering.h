// Load ordering: a core's DMA unit runs its transfers in program order, so in a
// run of consecutive DMA loads the first one issued is the first one to land.
// The lowering lists a tile's loads in the order of Halide's realizations
// (with whole K: A, B, then the bias row; with a residual, R before the bias
// row; with K chunks the bias row already comes first), but the bias row is
// read first: its widening and the accumulator's initialization on the SFU run
// before the matmul reads A and B, and behind A's and B's loads they run while
// the PT waits (gen_matmul m=n=2048 k=64, one 512 x 256 tile a core: the SFU
// fills the 512 KB accumulator after 98 KB of loads). In every run of
// consecutive loads, a load that no later-read load follows (the run's last
// load, or one followed only by loads read no later than it; each load's
// first reader is sought among the siblings after the run) passes the load
// before it when that one is read later: its reader then works while the
// passed load lands. One place only: a load already followed by a later-read
// load overlaps that one as it is, and moving it further only delays other
// transfers (the Granite prefill's gate/up projection, where sorting each run
// put the bias row ahead of a gathered 1 MB A panel as well as B's first
// chunk: 1709.6 -> 1711.5 us).
//
// A load passes only a load that moves at least as many bytes: the passed load
// lands later by the mover's transfer, and the readers may be on different
// units, which run at once (attention's V tile, 128 KB read first by an SFU
// relayout, stays behind the next query tile's 16 KB that the PT reads
// meanwhile). Loads touching the same scratchpad bytes keep their order (the
// run's loads read DRAM only, so no DRAM order changes); loads shared over the
// ring are not yet marked (the pass runs before ring sharing, and every core's
// tree is ordered by the same rule, so the chains' loads stay in step).
// Expects the tree after prologue rotation; guarantees the same results.
#pragma once

#include <vector>

#include "program_tree/program_tree.h"

namespace spyre {
namespace compiler {

// Returns how many loads moved.
int order_loads_by_first_reader(std::vector<ProgramNode> &tree);

}  // namespace compiler
}  // namespace spyre
