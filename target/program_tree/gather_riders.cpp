// Gather riders (see gather_riders.h).
#include "program_tree/gather_riders.h"

#include "program_tree/scratchpad_accesses.h"

namespace spyre {
namespace compiler {

namespace {

bool is_gathered_load(const ProgramNode &n) {
    return n.kind == ProgramNode::Kind::Instruction && n.inst.op == isa::Opcode::DmaLoad &&
           n.inst.ring.role == RingShare::Role::Gathered;
}

int mark(std::vector<ProgramNode> &nodes, std::vector<int64_t> &trips) {
    int marked = 0;
    for (size_t j = 0; j < nodes.size(); j++) {
        ProgramNode &n = nodes[j];
        if (n.kind == ProgramNode::Kind::Loop) {
            trips.push_back(n.trip);
            marked += mark(n.body, trips);
            trips.pop_back();
            continue;
        }
        if (!is_gathered_load(n) || n.inst.ring.position == 0) continue;
        const std::vector<ScratchpadAccess> tile = node_accesses(n, trips);
        const size_t tile_reader = first_conflicting_node(nodes, j + 1, tile, trips);
        int riders = 0;
        for (size_t i = j; i-- > 0;) {
            if (!nodes[i].is_unshared_load()) break;
            const std::vector<ScratchpadAccess> load = node_accesses(nodes[i], trips);
            if (accesses_conflict(load, tile) || first_conflicting_node(nodes, j + 1, load, trips) < tile_reader) break;
            riders++;
        }
        n.inst.ring.riders = riders;
        marked += riders;
    }
    return marked;
}

}  // namespace

int mark_gather_riders(std::vector<ProgramNode> &tree) {
    std::vector<int64_t> trips;
    return mark(tree, trips);
}

}  // namespace compiler
}  // namespace spyre
