// The compiler's in-memory form of one core's program before synchronization:
// a tree of hardware loops and instructions in the sequential order of the
// lowered Halide IR. Operands are affine in the loop levels of the tree
// (level 0 = outermost loop inside the core), with any number of levels; loop
// folding and synchronization turn the tree into the unit streams of isa.h.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "spyre/isa.h"

namespace spyre {
namespace compiler {

// Token channels [0, kUnitPairChannels) order the units of one core (one per
// directed unit pair); channels from kUnitPairChannels up are free for
// cross-core protocols (ring_sharing.h, the gathers of instruction_selection.cpp);
// stream emission (emission/core_streams.h) uses the unit pairs'.
constexpr int kUnitPairChannels = isa::kNumUnits * isa::kNumUnits;

// base + sum(coef[level] * L_level)
struct SymOperand {
    int64_t base = 0;
    std::vector<int64_t> coef;
    // A scratchpad temporary of one SFU expression (written before it is read within
    // the statement, dead after it): sfu_row_blocking.h may move it.
    bool temporary = false;

    int64_t coef_at(size_t level) const { return level < coef.size() ? coef[level] : 0; }
    void set_coef(size_t level, int64_t v) {
        if (coef.size() <= level) coef.resize(level + 1, 0);
        coef[level] = v;
    }
    bool depends_on_loops() const {
        for (int64_t c : coef) {
            if (c != 0) return true;
        }
        return false;
    }
};

// A scratchpad byte range an instruction reads or writes (over all iterations of its loops).
struct ScratchpadAccess {
    int64_t lo = 0, hi = 0;  // [lo, hi)
    bool write = false;
};

// A DMA load whose tile several cores share over the ring (ring_sharing.h):
// the first core of a chain loads it from DRAM, every other core receives it
// from its predecessor, and every core but the last forwards it. Stream
// emission expands the load into those instructions; everything before it
// (synchronization, double buffering) sees a load writing the same bytes.
struct RingShare {
    // First/Middle/Last: a chain whose first core loads the tile. Gathered: a closed chain whose
    // every core loads its share (`position` of `chain_cores`) and forwards the others' round it.
    enum class Role { None, First, Middle, Last, Gathered } role = Role::None;
    int upstream = -1, downstream = -1;  // neighbouring cores in the chain
    int position = 0, chain_cores = 1;   // Gathered: this core's share, and the chain's length
    int data_channel = 0;                // signalled in the receiver when the tile has arrived
    int credit_channel = 0;              // signalled in the sender when the receiver's buffer is free
    int64_t bytes = 0;                   // the tile's contiguous scratchpad bytes
    bool in_pieces = false;              // forwarded piece by piece (ring_forward_pieces), else whole
    // Gathered: how many of the plain loads just before this one in its body ride in its rounds,
    // issued after this core's `position`-th forward instead of ahead of its share's load
    // (gather_riders.h); 0 leaves them where they are.
    int riders = 0;
};

struct SymInstruction {
    isa::Opcode op = isa::Opcode::EndLoop;
    std::array<SymOperand, isa::kMaxFields> f{};
    std::string func;  // the Halide Func it implements, for messages
    RingShare ring;    // set on shared DMA loads only
    // An SFU copy of the overlap a staged tile shares with the tile before it
    // (tile_overlap_reuse.h): part of the staging of `func`, not a computation of it.
    bool copies_staged_overlap = false;
    // A control instruction (a wait for ring arrivals) placed by a pass: the stream it runs on and
    // the scratchpad bytes the event it waits for writes, so synchronization orders their readers.
    isa::Unit stream = isa::Unit::Any;
    std::vector<ScratchpadAccess> declared_writes;

    isa::Unit unit() const {
        const isa::Unit u = isa::opcode_spec(op).unit;
        return u == isa::Unit::Any ? stream : u;
    }
    // True when an operand varies with an enclosing loop's index.
    bool depends_on_loops() const {
        for (const SymOperand &o : f) {
            if (o.depends_on_loops()) return true;
        }
        return false;
    }
};

struct ProgramNode {
    enum class Kind { Loop, Instruction } kind = Kind::Instruction;
    // Loop
    int64_t trip = 0;
    std::string loop_name;
    int loop_id = -1;  // unique per core program; names the loop that stages a double-buffered buffer
    // Instruction: the first tile's load of a software-pipelined loop (double_buffering.h),
    // which the enclosing loop may move into its previous iteration.
    bool prologue_load = false;
    // Loop: the steady state of a software-pipelined loop (double_buffering.h).
    bool pipelined = false;
    std::vector<ProgramNode> body;
    // Instruction
    SymInstruction inst;

    // A DMA load not shared over the ring (its own core loads it whole).
    bool is_unshared_load() const {
        return kind == Kind::Instruction && inst.op == isa::Opcode::DmaLoad && inst.ring.role == RingShare::Role::None;
    }
    static ProgramNode loop(int64_t trip, const std::string &name) {
        ProgramNode n;
        n.kind = Kind::Loop;
        n.trip = trip;
        n.loop_name = name;
        return n;
    }
    static ProgramNode instruction(const SymInstruction &i) {
        ProgramNode n;
        n.kind = Kind::Instruction;
        n.inst = i;
        return n;
    }
};

// Adds to `out` the arguments the DMA stores of `nodes` (and of their loops) write.
inline void collect_stored_args(const std::vector<ProgramNode> &nodes, std::set<int64_t> &out) {
    for (const ProgramNode &n : nodes) {
        if (n.kind == ProgramNode::Kind::Loop) collect_stored_args(n.body, out);
        else if (n.inst.op == isa::Opcode::DmaStore) out.insert(n.inst.f[isa::field::DmaStore::arg].base);
    }
}

}  // namespace compiler
}  // namespace spyre
