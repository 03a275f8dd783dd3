// Tail splitting (see tail_splitting.h).
#include "program_tree/tail_splitting.h"

#include <algorithm>
#include <optional>

#include "program_tree/loop_rewrites.h"
#include "program_tree/row_pieces.h"
#include "program_tree/scratchpad_accesses.h"
#include "program_tree/sfu_operands.h"

namespace spyre {
namespace compiler {

namespace {

namespace fld = isa::field;

bool elementwise_sfu(const SymInstruction &in) {
    SfuOperands unused;
    return sfu_operands(in, &unused);
}

bool single_plane_store(const SymInstruction &in) {
    return in.op == isa::Opcode::DmaStore && in.f[fld::DmaStore::planes].base == 1;
}

// Piece p of `pieces` equal pieces of `in` (see the header), or nothing when it does not divide.
std::optional<SymInstruction> piece_of(const SymInstruction &in, int p, int pieces, const TailSplitting &o) {
    SymInstruction out = in;
    auto &f = out.f;
    if (in.op == isa::Opcode::Matmul) return matmul_row_piece(in, p, pieces, o.pt_pass_rows);
    if (in.op == isa::Opcode::DmaStore && f[fld::DmaStore::rows].base == 1) {
        // One contiguous row: whole sticks of it.
        const int64_t bytes = f[fld::DmaStore::row_bytes].base;
        if (bytes % (pieces * o.stick_bytes) != 0 || bytes / pieces < o.min_store_piece_bytes) return std::nullopt;
        f[fld::DmaStore::sp].base += p * (bytes / pieces);
        f[fld::DmaStore::dram].base += p * (bytes / pieces);
        f[fld::DmaStore::row_bytes].base = bytes / pieces;
        return out;
    }
    if (in.op == isa::Opcode::DmaStore) {
        const int64_t all_rows = f[fld::DmaStore::rows].base;
        if (all_rows % pieces != 0) return std::nullopt;
        const int64_t rows = all_rows / pieces;
        if (rows * f[fld::DmaStore::row_bytes].base < o.min_store_piece_bytes) return std::nullopt;
        f[fld::DmaStore::sp].base += p * rows * f[fld::DmaStore::sp_row_stride].base;
        f[fld::DmaStore::dram].base += p * rows * f[fld::DmaStore::dram_row_stride].base;
        f[fld::DmaStore::rows].base = rows;
        return out;
    }
    // An elementwise SFU instruction: along its rows, or along the elements of its one row.
    SfuOperands ops;
    if (!sfu_operands(in, &ops)) return std::nullopt;
    const int64_t n = f[ops.n].base, all_rows = f[ops.rows].base;
    const bool by_rows = all_rows % pieces == 0;
    if (!by_rows && (all_rows != 1 || n % pieces != 0)) return std::nullopt;
    for (const SfuOperands::Operand &o : ops.ops) {
        const int64_t mode = mode_of(in, o);
        if (mode >= 2) continue;  // an immediate or a runtime parameter: no address
        if (by_rows) f[o.addr].base += p * (all_rows / pieces) * f[o.stride].base;
        else if (mode == 0) f[o.addr].base += p * (n / pieces) * o.elem_bytes;  // a scalar per row (mode 1) of the one row stays
    }
    if (by_rows) f[ops.rows].base = all_rows / pieces;
    else f[ops.n].base = n / pieces;
    return out;
}

// pieces[i][p]: piece p of the run's instruction i; empty when some instruction does not divide.
std::vector<std::vector<SymInstruction>> cut(const std::vector<const SymInstruction *> &run, int pieces,
                                             const TailSplitting &o) {
    std::vector<std::vector<SymInstruction>> out(run.size());
    for (size_t i = 0; i < run.size(); i++) {
        for (int p = 0; p < pieces; p++) {
            std::optional<SymInstruction> piece = piece_of(*run[i], p, pieces, o);
            if (!piece) return {};
            out[i].push_back(*piece);
        }
    }
    return out;
}

// In the piece-by-piece order, piece p of instruction k runs before piece q > p of every earlier
// instruction i: legal when no such pair touches the same bytes with a write among them.
bool reorder_is_legal(const std::vector<std::vector<SymInstruction>> &pieces) {
    const std::vector<int64_t> top_level;
    std::vector<std::vector<std::vector<ScratchpadAccess>>> acc(pieces.size());
    for (size_t i = 0; i < pieces.size(); i++) {
        for (const SymInstruction &in : pieces[i]) acc[i].push_back(instruction_accesses(in, top_level));
    }
    for (size_t k = 1; k < pieces.size(); k++) {
        for (size_t i = 0; i < k; i++) {
            for (size_t p = 0; p < pieces[k].size(); p++) {
                for (size_t q = p + 1; q < pieces[i].size(); q++) {
                    if (accesses_conflict(acc[k][p], acc[i][q])) return false;
                }
            }
        }
    }
    return true;
}

// The start of the run (see the header) that ends `tree`, or tree.size() when there is none.
size_t trailing_run(const std::vector<ProgramNode> &tree, const TailSplitting &options) {
    if (tree.empty()) return tree.size();
    const ProgramNode &last = tree.back();
    if (last.kind != ProgramNode::Kind::Instruction || !single_plane_store(last.inst) ||
        last.inst.ring.role != RingShare::Role::None || last.inst.depends_on_loops()) {
        return tree.size();
    }
    // Back from the store: the epilogue's SFU instructions, then the matmuls that produce it
    // (what precedes them, such as the accumulator's initialization, stays whole).
    size_t first = tree.size() - 1;
    int matmuls = 0;
    while (first > 0) {
        const ProgramNode &n = tree[first - 1];
        if (n.kind != ProgramNode::Kind::Instruction || n.inst.depends_on_loops()) break;
        if (n.inst.op == isa::Opcode::Matmul) {
            if (++matmuls > options.max_matmuls) break;
        } else if (matmuls > 0 || !elementwise_sfu(n.inst)) {
            break;
        }
        first--;
    }
    return first;
}

// The last iteration of the loop tree[index] as top-level items after the loop (the loop
// keeps the others; a loop of one iteration is replaced by it).
void peel_last_iteration(std::vector<ProgramNode> &tree, size_t index) {
    ProgramNode &loop = tree[index];
    std::vector<ProgramNode> peeled = loop.body;
    for (ProgramNode &n : peeled) substitute_level(n, 0, loop.trip - 1);
    std::vector<ProgramNode> rest;
    if (loop.trip == 2) {
        rest = std::move(loop.body);
        for (ProgramNode &n : rest) substitute_level(n, 0, 0);
    } else if (loop.trip > 2) {
        loop.trip--;
        rest.push_back(std::move(loop));
    }
    for (ProgramNode &n : peeled) rest.push_back(std::move(n));
    tree.erase(tree.begin() + (long)index);
    tree.insert(tree.begin() + (long)index, std::make_move_iterator(rest.begin()), std::make_move_iterator(rest.end()));
}

// The run's producers may be in the last iteration of a loop: the loop right before a lone
// final store (a loop of tiles whose stores store spreading moved into the next iteration),
// or the final loop itself when its body ends in a store. Peels that iteration (in a copy)
// and returns the copy, or nothing when neither applies or the copy has no run with producers.
std::optional<std::vector<ProgramNode>> with_last_iteration_peeled(const std::vector<ProgramNode> &tree,
                                                                   const TailSplitting &options) {
    if (tree.empty()) return std::nullopt;
    size_t index = tree.size() - 1;
    if (tree.back().kind == ProgramNode::Kind::Instruction) {
        if (tree.size() < 2) return std::nullopt;
        index = tree.size() - 2;
    }
    if (tree[index].kind != ProgramNode::Kind::Loop) return std::nullopt;
    std::vector<ProgramNode> copy = tree;
    peel_last_iteration(copy, index);
    const size_t first = trailing_run(copy, options);
    if (first >= copy.size() - 1) return std::nullopt;
    return copy;
}

// The highest scratchpad byte the tree touches, plus one.
int64_t scratchpad_end(const std::vector<ProgramNode> &tree) {
    int64_t end = 0;
    for (const ProgramNode &n : tree) {
        for (const ScratchpadAccess &a : node_accesses(n, {})) end = std::max(end, a.hi);
    }
    return end;
}

// Moves the tile the final store reads (tree[first..] is the run) above every buffer of the
// core: the scratchpad allocator may have put it where the last matmul's operands were, and a
// piece of it written early would overwrite operands a later matmul piece reads. Applies when
// the run's last writer of the tile's bytes is an elementwise SFU instruction writing exactly
// the tile and nothing after it but the store touches them. Only that writer's destination
// and the store's source move: instructions before the writer still see the old bytes (which
// the writer no longer overwrites), and nothing after the program's last store reads them.
bool relocate_stored_tile(std::vector<ProgramNode> &tree, size_t first, const TailSplitting &options) {
    const std::vector<int64_t> top_level;
    SymInstruction &store = tree.back().inst;
    const std::vector<ScratchpadAccess> stored = instruction_accesses(store, top_level);
    if (stored.size() != 1) return false;
    const ScratchpadAccess tile = stored[0];
    auto overlaps = [&](const ScratchpadAccess &a) { return a.lo < tile.hi && tile.lo < a.hi; };
    for (size_t i = tree.size() - 1; i-- > first;) {
        SymInstruction &in = tree[i].inst;
        bool touches = false, writes_the_tile = false, writes_part = false;
        for (const ScratchpadAccess &a : instruction_accesses(in, top_level)) {
            if (!overlaps(a)) continue;
            touches = true;
            if (a.write && a.lo == tile.lo && a.hi == tile.hi) writes_the_tile = true;
            else if (a.write) writes_part = true;
        }
        if (!touches) continue;
        // The last instruction to touch the tile must be its writer (it may read the old bytes).
        if (!writes_the_tile || writes_part || !elementwise_sfu(in)) return false;
        const int64_t align = options.stick_bytes;
        const int64_t base = (scratchpad_end(tree) + align - 1) / align * align;
        if (base + (tile.hi - tile.lo) > options.scratchpad_bytes) return false;
        const int64_t delta = base - tile.lo;
        SfuOperands ops;
        sfu_operands(in, &ops);
        in.f[ops.ops[0].addr].base += delta;  // the destination
        store.f[fld::DmaStore::sp].base += delta;
        return true;
    }
    return false;
}

// Cuts the run tree[first..] into the most pieces (at most options.max_pieces) that every
// instruction divides into and whose piece-by-piece order is legal; false when none is.
bool cut_run_into_pieces(std::vector<ProgramNode> &tree, size_t first, const TailSplitting &options, int *pieces_out) {
    std::vector<const SymInstruction *> run;
    for (size_t i = first; i < tree.size(); i++) run.push_back(&tree[i].inst);
    for (int pieces = options.max_pieces; pieces >= 2; pieces--) {
        std::vector<std::vector<SymInstruction>> cut_run = cut(run, pieces, options);
        if (cut_run.empty() || !reorder_is_legal(cut_run)) continue;
        std::vector<ProgramNode> tail;
        for (int p = 0; p < pieces; p++) {
            for (const std::vector<SymInstruction> &instruction : cut_run) tail.push_back(ProgramNode::instruction(instruction[p]));
        }
        tree.erase(tree.begin() + (long)first, tree.end());
        for (ProgramNode &n : tail) tree.push_back(std::move(n));
        *pieces_out = pieces;
        return true;
    }
    return false;
}

}  // namespace

int split_trailing_tile(std::vector<ProgramNode> &tree, const TailSplitting &options) {
    if (options.max_pieces < 2 || tree.empty()) return 1;
    std::vector<ProgramNode> work;
    size_t first = trailing_run(tree, options);
    if (first >= tree.size() - 1) {
        // No producers before the final store at the top level: they may be a loop's last iteration.
        std::optional<std::vector<ProgramNode>> peeled = with_last_iteration_peeled(tree, options);
        if (!peeled) return 1;
        work = std::move(*peeled);
        first = trailing_run(work, options);
    } else {
        work = tree;
    }
    int pieces = 1;
    if (!cut_run_into_pieces(work, first, options, &pieces)) {
        if (!relocate_stored_tile(work, first, options) || !cut_run_into_pieces(work, first, options, &pieces)) return 1;
    }
    tree = std::move(work);
    return pieces;
}

}  // namespace compiler
}  // namespace spyre
