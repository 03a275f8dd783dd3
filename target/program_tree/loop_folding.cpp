// Folding single-instruction loops into instruction dimensions (see loop_folding.h).
#include "program_tree/loop_folding.h"
#include "program_tree/scratchpad_accesses.h"

#include <array>
#include <functional>
#include <string>

namespace spyre {
namespace compiler {

namespace {

namespace fld = isa::field;

int64_t elem_bytes(int64_t dtype) { return dtype_bytes((DType)dtype); }

bool fold_dma_load(SymInstruction &in, int level, int64_t trip) {
    auto &f = in.f;
    const int64_t cd = f[fld::DmaLoad::dram].coef_at(level), cs = f[fld::DmaLoad::sp].coef_at(level);
    const int64_t row = f[fld::DmaLoad::row_bytes].base, rows = f[fld::DmaLoad::rows].base;
    const int64_t planes = f[fld::DmaLoad::planes].base;
    const bool full = f[fld::DmaLoad::valid_bytes].base == row && f[fld::DmaLoad::valid_rows].base == rows &&
                      f[fld::DmaLoad::valid_planes].base == planes;
    if (!full) return false;
    if (rows == 1 && planes == 1 && cd == row && cs == row) {
        f[fld::DmaLoad::row_bytes].base = f[fld::DmaLoad::valid_bytes].base = row * trip;
        f[fld::DmaLoad::dram_row_stride].base = f[fld::DmaLoad::sp_row_stride].base = row * trip;
    } else if (planes == 1 && rows > 1 && cd == rows * f[fld::DmaLoad::dram_row_stride].base &&
               cs == rows * f[fld::DmaLoad::sp_row_stride].base) {
        f[fld::DmaLoad::rows].base = f[fld::DmaLoad::valid_rows].base = rows * trip;
    } else if (rows == 1 && planes == 1) {
        f[fld::DmaLoad::rows].base = f[fld::DmaLoad::valid_rows].base = trip;
        f[fld::DmaLoad::dram_row_stride].base = cd;
        f[fld::DmaLoad::sp_row_stride].base = cs;
    } else if (planes == 1) {
        f[fld::DmaLoad::planes].base = f[fld::DmaLoad::valid_planes].base = trip;
        f[fld::DmaLoad::dram_plane_stride].base = cd;
        f[fld::DmaLoad::sp_plane_stride].base = cs;
    } else {
        return false;
    }
    f[fld::DmaLoad::dram].set_coef(level, 0);
    f[fld::DmaLoad::sp].set_coef(level, 0);
    return true;
}

bool fold_dma_store(SymInstruction &in, int level, int64_t trip) {
    auto &f = in.f;
    const int64_t cd = f[fld::DmaStore::dram].coef_at(level), cs = f[fld::DmaStore::sp].coef_at(level);
    const int64_t row = f[fld::DmaStore::row_bytes].base, rows = f[fld::DmaStore::rows].base;
    const int64_t planes = f[fld::DmaStore::planes].base;
    if (rows == 1 && planes == 1 && cd == row && cs == row) {
        f[fld::DmaStore::row_bytes].base = row * trip;
        f[fld::DmaStore::dram_row_stride].base = f[fld::DmaStore::sp_row_stride].base = row * trip;
    } else if (planes == 1 && rows > 1 && cd == rows * f[fld::DmaStore::dram_row_stride].base &&
               cs == rows * f[fld::DmaStore::sp_row_stride].base) {
        f[fld::DmaStore::rows].base = rows * trip;
    } else if (rows == 1 && planes == 1) {
        f[fld::DmaStore::rows].base = trip;
        f[fld::DmaStore::dram_row_stride].base = cd;
        f[fld::DmaStore::sp_row_stride].base = cs;
    } else if (planes == 1) {
        f[fld::DmaStore::planes].base = trip;
        f[fld::DmaStore::dram_plane_stride].base = cd;
        f[fld::DmaStore::sp_plane_stride].base = cs;
    } else {
        return false;
    }
    f[fld::DmaStore::dram].set_coef(level, 0);
    f[fld::DmaStore::sp].set_coef(level, 0);
    return true;
}

// SFU formats: (address field, stride field, mode field or -1) per operand, and n/rows/type indices.
struct SfuLayout {
    std::vector<std::array<int, 3>> operands;  // dst first
    int n, rows, type;
};

bool sfu_layout(isa::Opcode op, SfuLayout *l) {
    const isa::OpcodeSpec &spec = isa::opcode_spec(op);
    if (spec.unit != isa::Unit::Sfu) return false;
    auto idx = [&](const char *name) {
        for (int i = 0; i < spec.num_fields; i++) {
            if (std::string(spec.fields[i].name) == name) return i;
        }
        return -1;
    };
    if (isa::is_reduction(spec.cost)) return false;
    l->operands.clear();
    l->operands.push_back({idx("dst"), idx("dst_stride"), -1});
    for (const char *s : {"a", "b", "c"}) {
        const std::string base = s;
        if (idx(s) < 0) continue;
        l->operands.push_back({idx(s), idx((base + "_stride").c_str()), idx((base + "_mode").c_str())});
    }
    l->n = idx("n");
    l->rows = idx("rows");
    l->type = op == isa::Opcode::Cast ? -1 : idx("type");
    return true;
}

bool fold_sfu(SymInstruction &in, int level, int64_t trip) {
    SfuLayout l;
    if (!sfu_layout(in.op, &l)) return false;
    auto &f = in.f;
    if (f[l.rows].base != 1) return false;
    // Bytes per element of each operand (Cast reads one type and writes another).
    std::vector<int64_t> eb;
    for (size_t i = 0; i < l.operands.size(); i++) {
        if (in.op == isa::Opcode::Cast) {
            eb.push_back(elem_bytes(i == 0 ? f[fld::Cast::dst_type].base : f[fld::Cast::type].base));
        } else {
            eb.push_back(elem_bytes(f[l.type].base));
        }
    }
    const int64_t n = f[l.n].base;
    // Contiguous in every vector operand and constant in every scalar one: more elements.
    bool contiguous = true;
    for (size_t i = 0; i < l.operands.size(); i++) {
        const auto &o = l.operands[i];
        const int64_t mode = o[2] < 0 ? 0 : f[o[2]].base;
        const int64_t c = f[o[0]].coef_at(level);
        if (mode == 0 && c != n * eb[i]) contiguous = false;
        if (mode != 0 && c != 0) contiguous = false;
    }
    if (contiguous) {
        f[l.n].base = n * trip;
    } else {
        f[l.rows].base = trip;
        for (const auto &o : l.operands) f[o[1]].base = f[o[0]].coef_at(level);
    }
    for (const auto &o : l.operands) f[o[0]].set_coef(level, 0);
    return true;
}

// Row reductions: one reduced row per folded iteration.
bool fold_row_reduce(SymInstruction &in, int level, int64_t trip) {
    namespace F = fld::RowSum;
    auto &f = in.f;
    if (f[F::rows].base != 1) return false;
    f[F::rows].base = trip;
    f[F::dst_stride].base = f[F::dst].coef_at(level);
    f[F::a_stride].base = f[F::a].coef_at(level);
    f[F::dst].set_coef(level, 0);
    f[F::a].set_coef(level, 0);
    return true;
}

bool fold_into(SymInstruction &in, int level, int64_t trip) {
    switch (in.op) {
    case isa::Opcode::RowSum:
    case isa::Opcode::RowMax: return fold_row_reduce(in, level, trip);
    case isa::Opcode::DmaLoad: return fold_dma_load(in, level, trip);
    case isa::Opcode::DmaStore: return fold_dma_store(in, level, trip);
    default: return fold_sfu(in, level, trip);
    }
}

// A loop of several SFU instructions, none touching what another writes over all
// its iterations (e.g. the initial values of a Tuple's components), is split into
// one loop per instruction when each of them folds: each becomes one instruction.
// `trips`: the enclosing loops' trip counts, outermost first, this loop's last.
bool fission_and_fold(ProgramNode &loop, int level, const std::vector<int64_t> &trips) {
    if (loop.body.size() < 2) return false;
    std::vector<ProgramNode> folded;
    for (const ProgramNode &b : loop.body) {
        SfuLayout l;
        if (b.kind != ProgramNode::Kind::Instruction || !sfu_layout(b.inst.op, &l)) return false;
        SymInstruction inst = b.inst;
        if (!fold_sfu(inst, level, loop.trip)) return false;
        folded.push_back(ProgramNode::instruction(inst));
    }
    for (size_t a = 0; a < loop.body.size(); a++) {
        const std::vector<ScratchpadAccess> ra = node_accesses(loop.body[a], trips);
        for (size_t b = a + 1; b < loop.body.size(); b++) {
            if (accesses_conflict(ra, node_accesses(loop.body[b], trips))) return false;
        }
    }
    loop.body = folded;  // the caller replaces the loop by its body
    return true;
}

void fold(std::vector<ProgramNode> &nodes, int level, std::vector<int64_t> &trips) {
    std::vector<ProgramNode> out;
    for (ProgramNode &n : nodes) {
        if (n.kind == ProgramNode::Kind::Loop) {
            trips.push_back(n.trip);
            fold(n.body, level + 1, trips);
            bool done = false;
            if (n.body.size() == 1 && n.body[0].kind == ProgramNode::Kind::Instruction) {
                SymInstruction inst = n.body[0].inst;
                if (fold_into(inst, level, n.trip)) {
                    n = ProgramNode::instruction(inst);
                    done = true;
                }
            }
            const bool split = !done && fission_and_fold(n, level, trips);
            trips.pop_back();
            if (split) {
                for (ProgramNode &b : n.body) out.push_back(std::move(b));
                continue;
            }
        }
        out.push_back(std::move(n));
    }
    nodes = std::move(out);
}

}  // namespace

void fold_loops(std::vector<ProgramNode> &tree) {
    // Folding an inner loop can make its parent a single-instruction loop: repeat to a fixed point.
    for (int pass = 0; pass < 8; pass++) {
        std::vector<ProgramNode> before = tree;
        std::vector<int64_t> trips;
        fold(tree, 0, trips);
        size_t loops_before = 0, loops_after = 0;
        std::function<void(const std::vector<ProgramNode> &, size_t &)> count = [&](const std::vector<ProgramNode> &v, size_t &c) {
            for (const auto &n : v) {
                if (n.kind == ProgramNode::Kind::Loop) {
                    c++;
                    count(n.body, c);
                }
            }
        };
        count(before, loops_before);
        count(tree, loops_after);
        if (loops_after == loops_before) break;
    }
}

}  // namespace compiler
}  // namespace spyre
