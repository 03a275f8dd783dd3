// Store spreading (see store_spreading.h).
#include "program_tree/store_spreading.h"

#include "program_tree/loop_rewrites.h"
#include "program_tree/scratchpad_accesses.h"

namespace spyre {
namespace compiler {

namespace {

namespace S = isa::field::DmaStore;

bool contains_prologue_load(const std::vector<ProgramNode> &body) {
    for (const ProgramNode &c : body) {
        if (c.kind == ProgramNode::Kind::Instruction && c.prologue_load) return true;
    }
    return false;
}

// DRAM bytes [lo, hi) of argument `arg` a DMA instruction touches over the loop box.
bool touches_dram_of(const ProgramNode &n, int64_t arg) {
    if (n.kind == ProgramNode::Kind::Loop) {
        for (const ProgramNode &c : n.body) {
            if (touches_dram_of(c, arg)) return true;
        }
        return false;
    }
    if (n.inst.op == isa::Opcode::DmaLoad) return n.inst.f[isa::field::DmaLoad::arg].base == arg;
    if (n.inst.op == isa::Opcode::DmaStore) return n.inst.f[S::arg].base == arg;
    return false;
}

// One loop: nodes[index] is a loop at `depth` inside loops of trip counts `trips`; replaced by
// its spread form when it has the shape (store_spreading.h), else left alone.
void spread_loop(std::vector<ProgramNode> &nodes, size_t index, int depth, std::vector<int64_t> &trips,
                 int64_t stick_bytes) {
    const ProgramNode &loop = nodes[index];
    if (loop.trip < 2 || loop.body.size() < 2 || !contains_prologue_load(loop.body)) return;
    const ProgramNode &store = loop.body.back();
    if (store.kind != ProgramNode::Kind::Instruction || store.inst.op != isa::Opcode::DmaStore) return;
    if (store.inst.f[S::planes].base != 1 || store.inst.f[S::dram].coef_at(depth + 1) != 0 ||
        store.inst.f[S::sp].coef_at(depth + 1) != 0) {
        return;
    }

    // The pipelined loop (the first, if several).
    size_t k = loop.body.size();
    for (size_t i = 0; i + 1 < loop.body.size() && k == loop.body.size(); i++) {
        if (loop.body[i].kind == ProgramNode::Kind::Loop && loop.body[i].pipelined) k = i;
    }
    if (k == loop.body.size() || loop.body[k].trip < 2) return;
    // Pieces of whole rows, or of whole sticks of a single contiguous row.
    const int64_t rows = store.inst.f[S::rows].base, row_bytes = store.inst.f[S::row_bytes].base;
    const int64_t units = rows > 1 ? rows : row_bytes / stick_bytes;
    // As many pieces as the pipelined loop has iterations, plus one right after it, if the units divide.
    int64_t pieces = 0;
    for (int64_t p = std::min<int64_t>(loop.body[k].trip + 1, units); p >= 2; p--) {
        if (units % p == 0) {
            pieces = p;
            break;
        }
    }
    if (pieces == 0) return;

    // Nothing of the next iteration up to the pieces may write the stored bytes or touch the stored tensor.
    trips.push_back(loop.trip);
    const std::vector<ScratchpadAccess> stored = node_accesses(store, trips);
    const int64_t arg = store.inst.f[S::arg].base;
    for (size_t i = 0; i + 1 < loop.body.size(); i++) {
        const ProgramNode &c = loop.body[i];
        if (touches_dram_of(c, arg) || (i <= k && accesses_conflict(stored, node_accesses(c, trips)))) {
            trips.pop_back();
            return;
        }
    }
    trips.pop_back();

    const size_t level = (size_t)depth, k_level = level + 1;
    std::vector<ProgramNode> body(loop.body.begin(), loop.body.end() - 1);

    // Iteration 0 without its store.
    std::vector<ProgramNode> replacement;
    for (ProgramNode c : body) {
        substitute_level(c, level, 0);
        replacement.push_back(std::move(c));
    }

    // Iterations 1..T-1 (index b' = b - 1), each storing tile b' in pieces during its pipelined loop.
    ProgramNode rest = loop;
    rest.trip = loop.trip - 1;
    rest.body.clear();
    ProgramNode piece = store;
    if (rows > 1) {
        const int64_t piece_rows = rows / pieces;
        piece.inst.f[S::rows].base = piece_rows;
        piece.inst.f[S::dram].set_coef(k_level, piece_rows * store.inst.f[S::dram_row_stride].base);
        piece.inst.f[S::sp].set_coef(k_level, piece_rows * store.inst.f[S::sp_row_stride].base);
    } else {
        const int64_t piece_bytes = row_bytes / pieces;
        piece.inst.f[S::row_bytes].base = piece_bytes;
        piece.inst.f[S::dram].set_coef(k_level, piece_bytes);
        piece.inst.f[S::sp].set_coef(k_level, piece_bytes);
    }
    for (size_t i = 0; i < body.size(); i++) {
        ProgramNode c = body[i];
        shift_iteration(c, level);
        if (i != k) {
            rest.body.push_back(std::move(c));
            continue;
        }
        ProgramNode with_pieces = c;
        with_pieces.trip = std::min(pieces, c.trip);
        with_pieces.body.push_back(piece);
        rest.body.push_back(std::move(with_pieces));
        if (pieces > c.trip) {
            ProgramNode after = piece;  // the last piece follows the loop
            substitute_level(after, k_level, c.trip);
            rest.body.push_back(std::move(after));
        } else if (c.trip > pieces) {
            ProgramNode remainder = c;
            remainder.trip = c.trip - pieces;
            for (ProgramNode &r : remainder.body) shift_iteration(r, k_level, pieces);
            rest.body.push_back(std::move(remainder));
        }
    }
    replacement.push_back(std::move(rest));

    ProgramNode last = store;
    substitute_level(last, level, loop.trip - 1);
    replacement.push_back(std::move(last));

    nodes.erase(nodes.begin() + (std::ptrdiff_t)index);
    nodes.insert(nodes.begin() + (std::ptrdiff_t)index, replacement.begin(), replacement.end());
}

}  // namespace

void spread_trailing_stores(std::vector<ProgramNode> &tree, int64_t stick_bytes) {
    rewrite_loops_innermost_first(tree, [&](std::vector<ProgramNode> &nodes, size_t index, int depth,
                                            std::vector<int64_t> &trips) {
        spread_loop(nodes, index, depth, trips, stick_bytes);
    });
}

}  // namespace compiler
}  // namespace spyre
