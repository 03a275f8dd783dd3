// Internal to instruction selection (instruction_selection.h): the per-core
// selector class and its small helpers, shared by the files that implement it:
//   instruction_selection.cpp  statements, loops, scratchpad placement, DMA, DRAM addressing
//   copy_stage_selection.cpp   copy_to_host() stages (halide_buffer_copy windows) -> DMA
//   reduction_selection.cpp    matmul-shaped updates -> PT, row reductions -> SFU reduce
//   sfu_selection.cpp          vector expression trees -> SFU instructions through temporaries
//   boundary_selection.cpp     boundary conditions and masks on the indices
//   index_tables.cpp           loop indices used as values -> per-core tables of consecutive values
#pragma once

#include <cctype>
#include <cstring>
#include <set>
#include <iostream>
#include <sstream>

#include "selection/index_evaluation.h"
#include "selection/instruction_selection.h"
#include "selection/scratchpad_plan.h"
#include "diagnostics.h"
#include "selection/spyre_types.h"

namespace spyre {
namespace compiler {
namespace selection {

using namespace Halide;
using namespace Halide::Internal;
namespace fld = isa::field;

// The counter of a loop whose min moves with an enclosing loop (visit_for), shown by its own name.
constexpr const char *kFromMinSuffix = ".from_min";

inline std::string to_text(const Expr &e) {
    std::ostringstream os;
    os << e;
    std::string s = os.str();
    if (s.size() > 160) s = s.substr(0, 157) + "...";
    return s;
}

inline std::string to_text(const Stmt &s) {
    std::ostringstream os;
    os << s;
    std::string t = os.str();
    auto nl = t.find('\n');
    if (nl != std::string::npos) t = t.substr(0, nl);
    if (t.size() > 160) t = t.substr(0, 157) + "...";
    return t;
}

// Reads no memory and calls nothing: only constants, loop variables, lets, parameters and
// arithmetic on them (index_tables.cpp).
bool reads_no_memory(const Expr &e);

// One field of an instruction being built: its index in isa.def (isa::field::<Opcode>::<name>) and value.
struct NamedField {
    int index;
    SymOperand value;
};

inline SymOperand constant(int64_t v) {
    SymOperand s;
    s.base = v;
    return s;
}

inline SymOperand scaled(const SymOperand &a, int64_t k, int64_t offset) {
    SymOperand s;
    s.base = a.base * k + offset;
    s.coef = a.coef;
    for (auto &c : s.coef) c *= k;
    return s;
}

// An SFU source operand.
struct SfuSource {
    int mode = 0;  // 0 vector, 1 scalar per row, 2 immediate, 3 parameter
    SymOperand addr;
    uint32_t imm = 0;
};

struct BufferInfo {
    int64_t address = 0;
    Type type;
    int64_t bytes = 0;  // the allocation (both copies when double-buffered)
};

class CoreSelector {
public:
    CoreSelector(const std::string &core_var, int core, const MachineDescription &m, KernelInterface &iface)
        : m_(m), iface_(iface), plan_(m.stick_bytes) {
        if (!core_var.empty()) env_.bind_constant(core_var, core);
        core_loop_ = core_var;
        core_ = core;
    }

    CoreProgram run(const Stmt &body);
    // A distributed region of `cores` cores (device_region.h): the core loop is walked for this core.
    void distribute(int cores) { cores_ = cores; }

private:
    // ---------------------------------------------------------------- errors
    // Halide makes Func names unique per process (stage$2); users wrote "stage". The
    // wrapper of an input `in.in()` is named in_im_global_wrapper; users wrote "in.in()".
    static std::string display(const std::string &name) {
        std::string out;
        for (size_t i = 0; i < name.size(); i++) {
            if (name[i] == '$' && i + 1 < name.size() && std::isdigit((unsigned char)name[i + 1])) {
                while (i + 1 < name.size() && std::isdigit((unsigned char)name[i + 1])) i++;
                continue;
            }
            out += name[i];
        }
        for (size_t at = out.find(kFromMinSuffix); at != std::string::npos; at = out.find(kFromMinSuffix, at)) {
            out.erase(at, std::strlen(kFromMinSuffix));
        }
        const std::string wrapper = "_im_global_wrapper";
        for (size_t at = out.find(wrapper); at != std::string::npos; at = out.find(wrapper, at)) {
            out.replace(at, wrapper.size(), ".in()");
        }
        return out;
    }

    [[noreturn]] void fail(const std::string &rule) const {
        std::ostringstream os;
        os << "Spyre: in Func '" << (func_.empty() ? "?" : display(func_)) << "'";
        if (!env_.loop_names().empty()) os << ", loop '" << display(env_.loop_names().back()) << "'";
        else os << ", loop '" << display(core_loop_) << "'";
        os << ": " << rule;
        throw CompileError(display(os.str()));
    }

    // A schedule that compiles but runs far below what the same algorithm staged
    // differently would: said once per Func and kernel, on stderr.
    void warn_once(const std::string &loop, const std::string &rule) const {
        if (!iface_.warned.insert(display(func_)).second) return;
        std::cerr << "Spyre: warning: in Func '" << display(func_) << "', loop '" << display(loop) << "': " << display(rule)
                  << "\n";
    }

    // When the failing access is inside an rfactor intermediate (Halide names it
    // "<acc>_intm"), what to change in its schedule; "" elsewhere.
    std::string rfactor_hint() const {
        for (const std::string &loop : env_.loop_names()) {
            const size_t at = loop.find("_intm.s");
            if (at == std::string::npos) continue;
            const std::string intm = display(loop.substr(0, at + 5)), acc = display(loop.substr(0, at));
            return "; this runs inside '" + intm + "', the rfactor intermediate of '" + acc +
                   "', whose update keeps its reduction loop innermost unless reordered: reorder that update with "
                   "the vectorized stick dimension innermost (e.g. part.update().reorder(u, rr, c).vectorize(u, ...)) "
                   "and stage its inputs at one of its loops outside the vectorized one (its core loop c, or rr)";
        }
        return "";
    }

    // ------------------------------------------------------------- statements
    void walk(const Stmt &s, std::vector<ProgramNode> &out);

    void walk_statement(const Stmt &s, std::vector<ProgramNode> &out);

    // A vector (or float) value bound by a LetStmt (Halide's CSE hoists values used
    // twice): computed once into a scratchpad buffer that lives for the let's body;
    // a dense read of a buffer the body does not write is read in place instead.
    void walk_value_let(const LetStmt *op, std::vector<ProgramNode> &out);

    void visit_for(const For *op, std::vector<ProgramNode> &out);
    void visit_distributed_core_loop(const For *op, std::vector<ProgramNode> &out);

    void visit_allocate(const Allocate *op, std::vector<ProgramNode> &out);

    // Requested by Func name; lowering may add a "$N" suffix (input wrappers get "$0").
    static bool requested(const std::set<std::string> &funcs, const std::string &allocation) {
        if (funcs.count(allocation)) return true;
        const size_t dollar = allocation.rfind('$');
        if (dollar == std::string::npos || dollar + 1 == allocation.size()) return false;
        for (size_t i = dollar + 1; i < allocation.size(); i++) {
            if (!std::isdigit((unsigned char)allocation[i])) return false;
        }
        return funcs.count(allocation.substr(0, dollar)) != 0;
    }
    bool double_buffer_requested(const std::string &allocation) const {
        return requested(iface_.double_buffered, allocation);
    }
    bool computing_ahead_requested(const std::string &allocation) const {
        return requested(iface_.computed_ahead, allocation);
    }

    static std::string type_text(const Type &t) {
        std::ostringstream os;
        os << t;
        return os.str();
    }

    const BufferInfo *scratchpad_buffer(const std::string &name) const {
        auto it = buffers_.find(name);
        return it == buffers_.end() ? nullptr : &it->second.back();
    }
    const KernelTensor *dram_tensor(const std::string &name) const {
        auto it = iface_.tensors.find(name);
        return it == iface_.tensors.end() ? nullptr : &it->second;
    }

    // Dense vector index ramp(base, 1, lanes): the affine base, or a compile error.
    // The base of a vector access that is dense along the element stride `stride` (1: dimension 0; for a
    // DRAM tensor, the stride of its stick dimension: dram_vector_stride).
    SymOperand dense_base(const Expr &index, const std::string &buffer, int lanes, int64_t stride = 1);
    static int64_t dram_vector_stride(const KernelTensor &t);

    void check_whole_sticks(const Type &t, const std::string &buffer);

    void check_stick_aligned(const SymOperand &bytes_offset, const std::string &what);

    // Appends one instruction, its fields given by name ({isa::field::DmaLoad::rows, constant(1)}, ...):
    // every field of the opcode exactly once, in any order, so the encoding follows isa.def.
    void emit(std::vector<ProgramNode> &out, isa::Opcode op, const std::vector<NamedField> &fields);
    // The same, for fields named through another opcode of the same layout (every binary SFU op through
    // isa::field::Add, ...): an internal error unless `op` and `named_as` have the same fields.
    void emit_as(std::vector<ProgramNode> &out, isa::Opcode op, isa::Opcode named_as, const std::vector<NamedField> &fields);
    // dma.load of one row of `row_bytes` (all valid) from argument `arg` at `dram` to `sp`.
    void emit_row_load(std::vector<ProgramNode> &out, int arg, const SymOperand &dram, const SymOperand &sp,
                       int64_t row_bytes);
    // sfu.cast of one row of `n` elements from `src` (type `from`) to `dst` (type `to`).
    void emit_cast(std::vector<ProgramNode> &out, const SymOperand &dst, DType to, const SymOperand &src, DType from,
                   int64_t n);
    // A row or column reduction `op` (sfu.rowsum, ...) of one row of `n` elements into `dst`, accumulating.
    void emit_reduction(std::vector<ProgramNode> &out, isa::Opcode op, const SymOperand &dst, const SymOperand &src,
                        int64_t n, DType t);

    // The device byte offset of the element at flat (padded, host-order) index
    // `flat`, affine in the loops. The default layout is the padded dense array
    // (offset = flat x element size); another dimension order is mapped
    // dimension by dimension: the index and each loop's step are unflattened
    // into coordinates, which must stay inside the padded box at every corner
    // of the loop box (so the mapping is exact), then re-flattened with the
    // layout's strides. Vectors start on stick boundaries (checked by the caller).
    SymOperand dram_address(const KernelTensor &t, const SymOperand &flat, const std::string &what, int lanes);

    void visit_store(const Store *op, std::vector<ProgramNode> &out);

    // ------------------------------------------------ copy_to_host() stages
    // `let W.buffer = _halide_buffer_init(alloca, make_struct(min, extent, stride, flags, ...), W, ...)`
    // describes the window of a copy stage in source coordinates; remember it.
    struct CopyWindow {
        std::string allocation;
        std::vector<Expr> dims;  // 4 per dimension: min, extent, stride (in W), flags
    };
    std::map<std::string, CopyWindow> copy_windows_;

    bool record_copy_destination(const LetStmt *op);

    // `halide_buffer_copy(src.buffer, null, W.buffer)` from a kernel input into a scratchpad window: one DMA load.
    bool select_buffer_copy(const Expr &value, std::vector<ProgramNode> &out);

    // ---------------------------------------------- boundary conditions
    // (boundary_selection.cpp) Reads through BoundaryConditions::repeat_edge /
    // constant_exterior, clamps and index selects, with the core index fixed:
    // Halide's partition conditions are static, a loop whose iterations read the
    // edge differently is split into runs that each read one way, and each run's
    // store is a whole-stick DMA of the interior, an edge stick (DMA of the stick
    // holding the edge element, then that element broadcast over the vector) or a
    // constant fill.
    bool resolve_static_condition(const IfThenElse *op, std::vector<ProgramNode> &out);
    bool try_partition_boundary_loop(const For *op, int64_t min, int64_t trip, std::vector<ProgramNode> &out);
    bool boundary_signature(const Stmt &s, std::string *sig, std::vector<int64_t> *nums);
    std::set<std::string> signature_allocations_;  // allocated inside the loop being partitioned
    void describe_boundary_value(const Expr &value, std::string *sig, std::vector<int64_t> *nums) const;
    // The store's value with index-only selects resolved over the loop box; a DRAM
    // load whose vector index is dense or one element becomes a DMA or an edge stick.
    bool select_boundary_store(const Store *op, const SymOperand &dst, std::vector<ProgramNode> &out);
    Expr resolve_index_selects(const Expr &value);
    bool reads_dram(const Expr &e) const;
    // A select condition on the indices, whose lanes are static: a 1/0 mask filled in scratchpad.
    bool static_mask(const Expr &cond, int lanes, const Type &t, SfuSource *mask, std::vector<ProgramNode> &out);
    std::vector<std::vector<int64_t>> box_sample() const;
    std::string boundary_hint() const;
    // "" unless `e` (an index, or an SFU operand with no mapping) reads through a boundary
    // condition inlined into the Func: a clamp of the indices or a condition on them. Then the
    // error to give, starting with `what` (what e is), naming the fix that compiles.
    std::string inline_boundary_error(const Halide::Expr &e, const std::string &what) const;

    // ------------------------------------------------------- row reductions
    // `for r: acc[i] = acc[i] + src[j + r]` (or max) with a scalar accumulator whose
    // index does not move with r: one sfu.rowsum / sfu.rowmax over the row. A
    // float16 source summed into float32 is widened into a temporary row first.
    void refuse_unsupported_widening(const Call *widening, const Type &user_type) const;
    // A reduction update whose term is an expression, not a staged row: warns (once per Func).
    void warn_if_unstaged_row_term(const For *loop, const std::vector<const LetStmt *> &lets, const Store *st,
                                   int64_t trip) const;
    bool try_row_reduction(const For *loop, int64_t min, int64_t trip, std::vector<ProgramNode> &out);

    // ----------------------------------------------------------------- matmul
    struct MatmulOperands {
        const Load *acc = nullptr, *a = nullptr, *b = nullptr;
        Type in_type;
    };

    static Expr strip_widening_cast(const Expr &e, Type *narrow);

    // B vector load and A broadcast scalar load, in either order.
    bool match_product(const Expr &p, const Expr &q, MatmulOperands *mm);

    bool match_matmul_store(const Store *st, MatmulOperands *mm);

    bool try_matmul(const For *outer, std::vector<ProgramNode> &out);

    // -------------------------------------------------------------------- SFU
    SymOperand new_temp(int lanes, const Type &t);

    uint32_t immediate_bits(const Expr &v, const Type &t);

    int param_index(const std::string &name, const Type &t, const Parameter &param);

    // Evaluates `e` (a vector of `lanes`) to an operand, emitting SFU instructions for inner nodes.
    SfuSource operand(const Expr &e, int lanes, std::vector<ProgramNode> &out);

    void emit_sfu(std::vector<ProgramNode> &out, isa::Opcode op, const SymOperand &dst, std::vector<SfuSource> src,
                  int n, const Type &t);

    void compile_into(const Expr &e, const SymOperand &dst, std::vector<ProgramNode> &out);

    // ------------------------------------------- index values (index_tables.cpp)
    // An int32 index affine in the loops (a dense ramp, a broadcast or a scalar) as an operand
    // read from a table of consecutive values; false when `e` is not such an index.
    bool index_operand(const Expr &e, SfuSource *s);
    // A scalar computed from the indices alone (f32(y) * 0.25f): its value as a per-row scalar
    // operand, computed as a one-lane vector; false when `v` reads memory.
    bool computed_index_scalar(const Expr &v, SfuSource *s, std::vector<ProgramNode> &out);
    // The scratchpad address of the table holding lo, lo + 1, ..., hi (filled once per core).
    SymOperand index_table(int64_t lo, int64_t hi);
    std::map<std::pair<int64_t, int64_t>, int64_t> index_tables_;  // (lo, hi) -> address
    std::vector<ProgramNode> index_table_fills_;                    // run before the core's first instruction

    // A comparison as a 1/0 mask in type t.
    SfuSource compare(const Expr &cond, int lanes, const Type &t, std::vector<ProgramNode> &out);

    const MachineDescription &m_;
    KernelInterface &iface_;
    IndexEnvironment env_;
    ScratchpadPlan plan_;
    std::map<std::string, std::vector<BufferInfo>> buffers_;
    std::map<std::string, std::vector<SfuSource>> vector_lets_;
    // The same lets' values as written, for messages that say what an operand is made of.
    std::map<std::string, std::vector<Expr>> vector_let_values_;
    std::vector<std::string> temps_;
    std::vector<PingPongBuffer> pingpong_;
    std::vector<int> loop_ids_;  // ids of the hardware loops being walked, outermost first
    int next_loop_id_ = 0;
    std::map<int, std::vector<std::string>> held_until_loop_end_;  // double-buffered, by loop level
    bool held(const std::string &name) const {
        for (const auto &kv : held_until_loop_end_) {
            for (const std::string &n : kv.second) {
                if (n == name) return true;
            }
        }
        return false;
    }
    int temp_counter_ = 0;
    std::string func_;
    std::string core_loop_;
    int core_ = 0;
    int cores_ = 0;                 // > 0: a distributed region of that many cores
    bool past_core_loop_ = false;   // a distributed core loop was walked
    std::vector<GatheredPart> gathered_;
};

}  // namespace selection
}  // namespace compiler
}  // namespace spyre
