// Load sinking (see load_sinking.h).
#include "program_tree/load_sinking.h"

#include "program_tree/loop_rewrites.h"
#include "program_tree/scratchpad_accesses.h"

namespace spyre {
namespace compiler {

namespace {

bool holds_dma_loads(const ProgramNode &n) {
    if (n.kind == ProgramNode::Kind::Instruction) return n.inst.op == isa::Opcode::DmaLoad;
    for (const ProgramNode &c : n.body) {
        if (holds_dma_loads(c)) return true;
    }
    return false;
}

bool movable_load(const ProgramNode &n) {
    return n.is_unshared_load() && !n.prologue_load;
}

int sink(std::vector<ProgramNode> &nodes, std::vector<int64_t> &trips) {
    int moved = 0;
    for (ProgramNode &n : nodes) {
        if (n.kind == ProgramNode::Kind::Loop) {
            trips.push_back(n.trip);
            moved += sink(n.body, trips);
            trips.pop_back();
        }
    }
    // From the last load up, so a load that moves is not visited again.
    for (size_t i = nodes.size(); i-- > 0;) {
        if (!movable_load(nodes[i])) continue;
        const std::vector<ScratchpadAccess> mine = node_accesses(nodes[i], trips);
        size_t reader = nodes.size();
        bool past_a_loop_of_loads = false;
        for (size_t j = i + 1; j < nodes.size(); j++) {
            if (accesses_conflict(mine, node_accesses(nodes[j], trips)) || dram_conflict(nodes[i], nodes[j], trips)) {
                reader = j;
                break;
            }
            if (nodes[j].kind == ProgramNode::Kind::Loop && holds_dma_loads(nodes[j])) past_a_loop_of_loads = true;
        }
        if (reader == nodes.size() || !past_a_loop_of_loads) continue;
        ProgramNode load = std::move(nodes[i]);
        nodes.erase(nodes.begin() + (long)i);
        nodes.insert(nodes.begin() + (long)(reader - 1), std::move(load));
        moved++;
    }
    return moved;
}

}  // namespace

int sink_late_loads(std::vector<ProgramNode> &tree) {
    std::vector<int64_t> trips;
    return sink(tree, trips);
}

}  // namespace compiler
}  // namespace spyre
