// The compile-time dry run of an emitted program (dry_run.h).
#include "checks/dry_run.h"

#include <set>
#include <string>
#include <vector>

#include "spyre/layout.h"
#include "spyre/simulator.h"
#include "diagnostics.h"
#include "program_tree/scratchpad_accesses.h"

namespace spyre {
namespace compiler {

namespace {

std::string range_text(const ScratchpadPlacement &p) {
    return "[" + std::to_string(p.address) + ", " + std::to_string(p.address + p.bytes) + ")";
}

// What a read of unwritten bytes means in the schedule's terms: the buffer the operand points
// into, whether the byte is past its end or in a part nothing wrote, and the fix.
std::string explain_unwritten_read(const SimulationError &e, const std::vector<ScratchpadPlacement> &placements) {
    std::vector<const ScratchpadPlacement *> holders;  // buffers placed where the operand starts
    std::set<std::string> seen;
    for (const ScratchpadPlacement &p : placements) {
        if (e.unwritten_operand_start >= p.address && e.unwritten_operand_start < p.address + p.bytes &&
            seen.insert(p.name).second) {
            holders.push_back(&p);
        }
    }
    if (holders.empty()) return "";
    std::string names;
    for (const ScratchpadPlacement *p : holders) {
        if (!names.empty()) names += " or ";
        names += "'" + p->name + "' " + range_text(*p);
    }
    const ScratchpadPlacement &h = *holders.back();
    const bool past_the_end = e.unwritten_byte >= h.address + h.bytes;
    std::string s = ". The operand reads the scratchpad buffer " + names + " of core " + std::to_string(e.core);
    s += past_the_end ? ", and runs past its end" : ", in a part of it no instruction wrote before this read";
    s += ": a vector or tile of its consumer reaches further than the region of '" + h.name +
         "' that is computed or staged. Make the consumer's vector width (and tile) divide the extent of '" + h.name +
         "' it reads, or compute '" + h.name + "' over the whole region its consumer reads (a split with "
         "TailStrategy::RoundUp on a tensor padded to whole tiles with spyre::constrain_tensor)";
    return s;
}

// The first instruction of opcode `op` in tree order whose reads span the scratchpad byte
// `address` (over all its iterations): its Func and the loops around it (outermost first),
// as the message names them.
bool find_reader(const std::vector<ProgramNode> &nodes, isa::Opcode op, int64_t address, std::vector<int64_t> &trips,
                 std::vector<std::string> &loops, std::string &out) {
    for (const ProgramNode &n : nodes) {
        if (n.kind == ProgramNode::Kind::Loop) {
            trips.push_back(n.trip);
            loops.push_back(n.loop_name);
            const bool found = find_reader(n.body, op, address, trips, loops, out);
            trips.pop_back();
            loops.pop_back();
            if (found) return true;
            continue;
        }
        if (n.inst.op != op) continue;
        for (const ScratchpadAccess &a : node_accesses(n, trips)) {
            if (a.write || address < a.lo || address >= a.hi) continue;
            out = ". The first " + std::string(isa::opcode_spec(n.inst.op).mnemonic) +
                  " in the core's program whose reads reach that byte is Func '" + n.inst.func + "''s";
            if (loops.empty()) {
                out += ", outside the core's loops";
            } else {
                out += ", in loop";
                for (size_t i = 0; i < loops.size(); i++) out += (i ? " > '" : " '") + loops[i] + "'";
            }
            return true;
        }
    }
    return false;
}

}  // namespace

void dry_run_program(const Program &program, const MachineDescription &m,
                     const std::vector<std::vector<ScratchpadPlacement>> &placements,
                     const std::vector<const std::vector<ProgramNode> *> &trees) {
    std::vector<ArgumentBinding> bindings;
    for (const ProgramArgument &a : program.args) {
        ArgumentBinding b;
        b.bytes = layout_addressing(a.shape, a.layout, m.stick_bytes).total_bytes;  // no data: timing only
        bindings.push_back(b);
    }
    // Scalar parameters only feed SFU values, never addresses or control.
    const std::vector<double> params(program.params.size(), 0.0);
    SimulationOptions options;
    options.functional = false;
    options.check_uninitialized = true;
    options.check_dram_write_races_timing_only = true;
    try {
        simulate_program(program, m, bindings, params, options);
    } catch (const SimulationError &e) {
        std::string reader, explanation;
        if (e.unwritten_byte >= 0 && e.core >= 0 && e.core < (int)trees.size() && trees[e.core] && e.unit >= 0 &&
            e.unit < isa::kNumUnits && e.instruction_index >= 0 &&
            e.instruction_index < (int64_t)program.cores[e.core].unit[e.unit].size()) {
            std::vector<int64_t> trips;
            std::vector<std::string> loops;
            find_reader(*trees[e.core], program.cores[e.core].unit[e.unit][e.instruction_index].op, e.unwritten_byte,
                        trips, loops, reader);
        }
        if (e.unwritten_byte >= 0 && e.core >= 0 && e.core < (int)placements.size()) {
            explanation = explain_unwritten_read(e, placements[e.core]);
        }
        throw CompileError("Spyre: kernel '" + program.kernel_name +
                           "': the program this schedule compiles to breaks a hardware rule when it runs: " +
                           std::string(e.what()) + reader + explanation +
                           (explanation.empty() ? "; the backend should have refused this schedule (please report it "
                                                  "with the generator's parameters); a different tile size or core "
                                                  "count avoids it"
                                                : ""));
    } catch (const Error &e) {
        throw CompileError("Spyre: kernel '" + program.kernel_name + "': internal error: the dry run of its program failed: " +
                           std::string(e.what()));
    }
}

}  // namespace compiler
}  // namespace spyre
