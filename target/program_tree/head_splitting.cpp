// Head splitting (see head_splitting.h).
#include "program_tree/head_splitting.h"

#include <optional>

#include "program_tree/loop_rewrites.h"
#include "program_tree/row_pieces.h"
#include "program_tree/scratchpad_accesses.h"

namespace spyre {
namespace compiler {

namespace {

namespace fld = isa::field;

bool is_instruction(const ProgramNode &n, isa::Opcode op) {
    return n.kind == ProgramNode::Kind::Instruction && n.inst.op == op;
}

// The index of the first top-level matmul, peeling the first iteration of the loop that holds
// it when a loop comes first; nothing when the loop's body reaches a nested loop before a matmul.
std::optional<size_t> first_matmul_at_top_level(std::vector<ProgramNode> &tree) {
    for (size_t i = 0; i < tree.size(); i++) {
        if (is_instruction(tree[i], isa::Opcode::Matmul)) return i;
        if (tree[i].kind != ProgramNode::Kind::Loop) continue;
        size_t in_body = 0;
        while (in_body < tree[i].body.size() && !is_instruction(tree[i].body[in_body], isa::Opcode::Matmul)) {
            if (tree[i].body[in_body].kind == ProgramNode::Kind::Loop) return std::nullopt;
            in_body++;
        }
        if (in_body == tree[i].body.size()) return std::nullopt;
        peel_first_iteration(tree, i);
        return i + in_body;
    }
    return std::nullopt;
}

// The panel the matmul tree[mi] reads as its A operand: the last top-level DMA load before it
// that writes exactly those rows; tree.size() when there is none.
size_t panel_load(const std::vector<ProgramNode> &tree, size_t mi) {
    namespace Ld = fld::DmaLoad;
    const SymInstruction &mm = tree[mi].inst;
    const int64_t a = mm.f[fld::Matmul::a].base, lda = mm.f[fld::Matmul::lda].base, m = mm.f[fld::Matmul::m].base;
    for (size_t i = mi; i-- > 0;) {
        if (!is_instruction(tree[i], isa::Opcode::DmaLoad)) continue;
        const SymInstruction &ld = tree[i].inst;
        if (ld.ring.role != RingShare::Role::None || ld.depends_on_loops() || ld.f[Ld::sp].base != a) continue;
        const int64_t rows = ld.f[Ld::rows].base, row_bytes = ld.f[Ld::row_bytes].base;
        const bool flattened = rows == 1 && row_bytes == m * lda;
        const bool row_per_row = rows == m && ld.f[Ld::sp_row_stride].base == lda && row_bytes <= lda;
        return flattened || row_per_row ? i : tree.size();
    }
    return tree.size();
}

// Where the panel's later pieces go: after the last top-level DMA load in (li, mi) that the
// matmul tree[mi] or an item before it reads, so the first tile's own operands load first.
size_t insertion_point(const std::vector<ProgramNode> &tree, size_t li, size_t mi) {
    const std::vector<int64_t> top_level;
    size_t after = li;
    for (size_t j = li + 1; j < mi; j++) {
        if (!is_instruction(tree[j], isa::Opcode::DmaLoad)) continue;
        const std::vector<ScratchpadAccess> written = node_accesses(tree[j], top_level);
        for (size_t k = j + 1; k <= mi; k++) {
            if (accesses_conflict(written, node_accesses(tree[k], top_level))) {
                after = j;
                break;
            }
        }
    }
    return after;
}

}  // namespace

int split_leading_panel(std::vector<ProgramNode> &tree, const HeadSplitting &options) {
    if (options.max_pieces < 2) return 1;
    std::vector<ProgramNode> work = tree;
    const std::optional<size_t> found = first_matmul_at_top_level(work);
    if (!found) return 1;
    const size_t mi = *found;
    if (work[mi].inst.depends_on_loops()) return 1;
    const size_t li = panel_load(work, mi);
    if (li == work.size()) return 1;
    const size_t ins = insertion_point(work, li, mi);

    const std::vector<int64_t> top_level;
    for (int pieces = options.max_pieces; pieces >= 2; pieces--) {
        std::vector<SymInstruction> loads, matmuls;
        for (int p = 0; p < pieces; p++) {
            std::optional<SymInstruction> load = load_row_piece(work[li].inst, p, pieces, options.stick_bytes);
            std::optional<SymInstruction> matmul = matmul_row_piece(work[mi].inst, p, pieces, options.pt_pass_rows);
            if (!load || !matmul) break;
            loads.push_back(*load);
            matmuls.push_back(*matmul);
        }
        if ((int)loads.size() != pieces) continue;
        namespace Ld = fld::DmaLoad;
        if (loads[0].f[Ld::rows].base * loads[0].f[Ld::row_bytes].base < options.min_piece_bytes) continue;
        // The later pieces load after the items in (li, ins]: none may touch their bytes.
        bool legal = true;
        for (int p = 1; p < pieces && legal; p++) {
            const ProgramNode piece = ProgramNode::instruction(loads[(size_t)p]);
            const std::vector<ScratchpadAccess> written = node_accesses(piece, top_level);
            for (size_t j = li + 1; j <= ins && legal; j++) {
                legal = !accesses_conflict(written, node_accesses(work[j], top_level)) && !dram_conflict(piece, work[j], top_level);
            }
        }
        if (!legal) return 1;
        std::vector<ProgramNode> out;
        for (size_t i = 0; i < work.size(); i++) {
            if (i == li) {
                out.push_back(ProgramNode::instruction(loads[0]));
            } else if (i == mi) {
                for (const SymInstruction &mm : matmuls) out.push_back(ProgramNode::instruction(mm));
            } else {
                out.push_back(std::move(work[i]));
            }
            if (i == ins) {
                for (int p = 1; p < pieces; p++) out.push_back(ProgramNode::instruction(loads[(size_t)p]));
            }
        }
        tree = std::move(out);
        return pieces;
    }
    return 1;
}

}  // namespace compiler
}  // namespace spyre
