// Prologue rotation (see prologue_rotation.h).
#include "program_tree/prologue_rotation.h"

#include "program_tree/loop_rewrites.h"
#include "program_tree/scratchpad_accesses.h"

namespace spyre {
namespace compiler {

namespace {

// nodes[index] is a loop at `depth` inside loops of trip counts `trips`: rotated if its body
// holds prologue loads none of the items before them conflicts with.
void rotate_loop(std::vector<ProgramNode> &nodes, size_t index, int depth, std::vector<int64_t> &trips) {
    const ProgramNode &loop = nodes[index];
    if (loop.trip < 2) return;
    std::vector<ProgramNode> loads, rest;
    trips.push_back(loop.trip);
    for (const ProgramNode &c : loop.body) {
        if (c.kind == ProgramNode::Kind::Instruction && c.prologue_load) {
            // Everything before it in the body now runs after it: it must be independent.
            for (const ProgramNode &r : rest) {
                if (accesses_conflict(node_accesses(c, trips), node_accesses(r, trips)) || dram_conflict(c, r, trips)) {
                    return trips.pop_back();
                }
            }
            loads.push_back(c);
        } else {
            rest.push_back(c);
        }
    }
    trips.pop_back();
    if (loads.empty()) return;

    std::vector<ProgramNode> replacement;
    for (ProgramNode c : loads) {
        substitute_level(c, (size_t)depth, 0);
        c.prologue_load = false;
        replacement.push_back(std::move(c));
    }
    ProgramNode body = loop;
    body.trip = loop.trip - 1;
    body.body = rest;
    const size_t first_next = body.body.size();
    for (ProgramNode c : loads) {
        shift_iteration(c, (size_t)depth);
        c.prologue_load = false;
        body.body.push_back(std::move(c));
    }
    trips.push_back(body.trip);
    hoist_loads(body.body, first_next, trips);
    trips.pop_back();
    replacement.push_back(std::move(body));
    for (ProgramNode c : rest) {
        substitute_level(c, (size_t)depth, loop.trip - 1);
        replacement.push_back(std::move(c));
    }
    nodes.erase(nodes.begin() + (std::ptrdiff_t)index);
    nodes.insert(nodes.begin() + (std::ptrdiff_t)index, replacement.begin(), replacement.end());
}

// In a straight-line list (a loop body unrolled by two for a double-buffered result, or the
// core's top level), a pipeline's prologue loads that follow an earlier pipeline's trailing
// work move up above it, past every item they are independent of, in order among loads.
void hoist_prologue_loads(std::vector<ProgramNode> &nodes, std::vector<int64_t> &trips) {
    for (ProgramNode &n : nodes) {
        if (n.kind != ProgramNode::Kind::Loop) continue;
        trips.push_back(n.trip);
        hoist_prologue_loads(n.body, trips);
        trips.pop_back();
    }
    for (size_t i = 0; i < nodes.size(); i++) {
        const ProgramNode &n = nodes[i];
        if (n.kind == ProgramNode::Kind::Instruction && n.prologue_load && n.inst.op == isa::Opcode::DmaLoad) hoist_load(nodes, i, trips);
    }
}

}  // namespace

void rotate_prologue_loads(std::vector<ProgramNode> &tree) {
    rewrite_loops_innermost_first(tree, rotate_loop);
    std::vector<int64_t> trips;
    hoist_prologue_loads(tree, trips);
}

}  // namespace compiler
}  // namespace spyre
