// Load ordering (see load_ordering.h).
#include "program_tree/load_ordering.h"

#include "program_tree/scratchpad_accesses.h"

namespace spyre {
namespace compiler {

namespace {

// The bytes one load moves (its rows, planes and row length); -1 where they vary with the loops.
int64_t load_bytes(const ProgramNode &n) {
    namespace Ld = isa::field::DmaLoad;
    const SymOperand &row = n.inst.f[Ld::row_bytes], &rows = n.inst.f[Ld::rows], &planes = n.inst.f[Ld::planes];
    if (row.depends_on_loops() || rows.depends_on_loops() || planes.depends_on_loops()) return -1;
    return row.base * rows.base * planes.base;
}

// In the run of loads nodes[begin, end), moves loads one place each by their first readers among
// nodes[end, ...); returns how many moved.
int order_run(std::vector<ProgramNode> &nodes, size_t begin, size_t end, const std::vector<int64_t> &trips) {
    struct Load {
        std::vector<ScratchpadAccess> accesses;
        size_t first_reader;
        int64_t bytes;
    };
    std::vector<Load> loads;
    for (size_t i = begin; i < end; i++) {
        std::vector<ScratchpadAccess> accesses = node_accesses(nodes[i], trips);
        const size_t first_reader = first_conflicting_node(nodes, end, accesses, trips);
        loads.push_back(Load{std::move(accesses), first_reader, load_bytes(nodes[i])});
    }
    // A load that no later-read load follows (the run's last load, or one followed only by
    // loads read no later than it) waits behind its predecessor while
    // its reader could work: it passes that predecessor when it is read strictly earlier,
    // moves no more bytes and shares no scratchpad bytes with it. One place: the passed load
    // then follows it, and its reader works while that load lands.
    auto passes = [](const Load &l, const Load &earlier) {
        return l.first_reader < earlier.first_reader && l.bytes >= 0 && l.bytes <= earlier.bytes &&
               !accesses_conflict(l.accesses, earlier.accesses);
    };
    int moved = 0;
    for (size_t i = loads.size(); i-- > 1;) {
        bool overlapped = false;  // a load after it lands while its reader works
        for (size_t j = i + 1; j < loads.size(); j++) overlapped = overlapped || loads[j].first_reader > loads[i].first_reader;
        if (overlapped || !passes(loads[i], loads[i - 1])) continue;
        std::swap(loads[i], loads[i - 1]);
        std::swap(nodes[begin + i], nodes[begin + i - 1]);
        moved++;
        i--;  // the passed load keeps its new place
    }
    return moved;
}

int order(std::vector<ProgramNode> &nodes, std::vector<int64_t> &trips) {
    int moved = 0;
    for (ProgramNode &n : nodes) {
        if (n.kind == ProgramNode::Kind::Loop) {
            trips.push_back(n.trip);
            moved += order(n.body, trips);
            trips.pop_back();
        }
    }
    for (size_t begin = 0; begin < nodes.size();) {
        size_t end = begin;
        while (end < nodes.size() && nodes[end].is_unshared_load()) end++;
        if (end - begin >= 2) moved += order_run(nodes, begin, end, trips);
        begin = end == begin ? begin + 1 : end;
    }
    return moved;
}

}  // namespace

int order_loads_by_first_reader(std::vector<ProgramNode> &tree) {
    std::vector<int64_t> trips;
    return order(tree, trips);
}

}  // namespace compiler
}  // namespace spyre
