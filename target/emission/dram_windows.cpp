// DRAM windows (see dram_windows.h).
#include "emission/dram_windows.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "spyre/dram_window.h"
#include "diagnostics.h"

namespace spyre {
namespace compiler {

namespace {

bool is_transfer(isa::Opcode op) { return op == isa::Opcode::DmaLoad || op == isa::Opcode::DmaStore; }

// The fields a load and a store share, by index (valid_*: -1 for a store, which writes all it moves).
struct TransferFields {
    int arg, dram, sp, row_bytes, valid_bytes, rows, dram_row_stride, sp_row_stride, valid_rows, planes,
        dram_plane_stride, sp_plane_stride, valid_planes;
};

TransferFields fields_of(isa::Opcode op) {
    if (op == isa::Opcode::DmaLoad) {
        namespace F = isa::field::DmaLoad;
        return {F::arg,           F::dram,       F::sp,     F::row_bytes,         F::valid_bytes,
                F::rows,          F::dram_row_stride,       F::sp_row_stride,     F::valid_rows,
                F::planes,        F::dram_plane_stride,     F::sp_plane_stride,   F::valid_planes};
    }
    namespace F = isa::field::DmaStore;
    return {F::arg,  F::dram, F::sp, F::row_bytes, -1, F::rows, F::dram_row_stride, F::sp_row_stride, -1,
            F::planes, F::dram_plane_stride, F::sp_plane_stride, -1};
}

// One transfer: the bytes of one execution at loop indices 0, and how far its DRAM offset moves
// over the loops around it (lowest and highest offsets relative to indices 0).
struct TransferReach {
    DramExtent at_zero;
    int64_t down = 0, up = 0;
    DramExtent overall() const { return {at_zero.lo + down, at_zero.hi + up}; }
};

TransferReach reach_of(const isa::Instruction &inst, const std::vector<int64_t> &trips) {
    int64_t f[isa::kMaxFields];
    for (int i = 0; i < isa::kMaxFields; i++) f[i] = inst.f[i].base;
    TransferReach r;
    r.at_zero = dma_dram_extent(inst.op, f);
    const isa::Operand &dram = inst.f[fields_of(inst.op).dram];
    for (size_t d = 0; d < trips.size(); d++) {
        const int64_t move = (int64_t)dram.stride[d] * (trips[d] - 1);
        r.down += std::min<int64_t>(0, move);
        r.up += std::max<int64_t>(0, move);
    }
    return r;
}

// How many of `count` steps of `stride` bytes, each `extent` bytes long, fit in `span` bytes.
int64_t steps_within(int64_t span, int64_t extent, int64_t stride, int64_t count) {
    if (stride == 0) return count;
    return std::max<int64_t>(1, std::min(count, (span - extent) / std::abs(stride) + 1));
}

// Which planes, rows and bytes of each row of a transfer a piece of it moves.
struct PieceRange {
    int64_t p0, np, r0, nr, b0, nb;
};

isa::Instruction piece_of(const isa::Instruction &inst, const TransferFields &t, const PieceRange &r) {
    isa::Instruction piece = inst;
    piece.f[t.dram].base += r.p0 * inst[t.dram_plane_stride] + r.r0 * inst[t.dram_row_stride] + r.b0;
    piece.f[t.sp].base += r.p0 * inst[t.sp_plane_stride] + r.r0 * inst[t.sp_row_stride] + r.b0;
    piece.f[t.planes].base = r.np;
    piece.f[t.rows].base = r.nr;
    piece.f[t.row_bytes].base = r.nb;
    auto clamp = [](int64_t valid, int64_t first, int64_t n) { return std::max<int64_t>(0, std::min(n, valid - first)); };
    if (t.valid_planes >= 0) piece.f[t.valid_planes].base = clamp(inst[t.valid_planes], r.p0, r.np);
    if (t.valid_rows >= 0) piece.f[t.valid_rows].base = clamp(inst[t.valid_rows], r.r0, r.nr);
    if (t.valid_bytes >= 0) piece.f[t.valid_bytes].base = clamp(inst[t.valid_bytes], r.b0, r.nb);
    return piece;
}

// A transfer reaching over more than `span` bytes of DRAM as pieces that each reach at most
// `span`: groups of whole planes where a plane fits, else groups of rows of one plane where a
// row fits, else whole sticks of one row.
std::vector<isa::Instruction> split_to_span(const isa::Instruction &inst, int64_t span, int64_t stick,
                                            const std::string &tensor) {
    const TransferFields t = fields_of(inst.op);
    const int64_t row = inst[t.row_bytes], rows = inst[t.rows], planes = inst[t.planes];
    std::vector<isa::Instruction> pieces;
    const int64_t plane_extent = (rows - 1) * std::abs(inst[t.dram_row_stride]) + row;
    if (plane_extent <= span) {
        const int64_t per = steps_within(span, plane_extent, inst[t.dram_plane_stride], planes);
        for (int64_t p0 = 0; p0 < planes; p0 += per)
            pieces.push_back(piece_of(inst, t, {p0, std::min(per, planes - p0), 0, rows, 0, row}));
        return pieces;
    }
    if (row <= span) {
        const int64_t per = steps_within(span, row, inst[t.dram_row_stride], rows);
        for (int64_t p = 0; p < planes; p++)
            for (int64_t r0 = 0; r0 < rows; r0 += per)
                pieces.push_back(piece_of(inst, t, {p, 1, r0, std::min(per, rows - r0), 0, row}));
        return pieces;
    }
    const int64_t chunk = span / stick * stick;
    if (chunk == 0) {
        throw CompileError("Spyre: a core addresses " + std::to_string(span) + " bytes of '" + tensor +
                           "' at a time (max_core_span_bytes), less than one " + std::to_string(stick) +
                           "-byte stick: no transfer of it can be addressed");
    }
    for (int64_t p = 0; p < planes; p++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t b0 = 0; b0 < row; b0 += chunk)
                pieces.push_back(piece_of(inst, t, {p, 1, r, 1, b0, std::min(chunk, row - b0)}));
    return pieces;
}

isa::Instruction window_at(int64_t arg, const isa::Operand &base) {
    isa::Instruction w;
    w.op = isa::Opcode::DmaWindow;
    w.f[isa::field::DmaWindow::arg].base = arg;
    w.f[isa::field::DmaWindow::base] = base;
    return w;
}

}  // namespace

void address_through_dram_windows(CoreStreams &core, const std::vector<ProgramArgument> &args,
                                  const MachineDescription &m) {
    std::vector<isa::Instruction> &stream = core.unit[(int)isa::Unit::Dma];
    const int64_t span = m.max_core_span_bytes;
    // Pass 1: the bytes of each argument the stream touches.
    std::map<int64_t, DramExtent> touched;
    std::vector<int64_t> trips;
    for (const isa::Instruction &inst : stream) {
        if (inst.op == isa::Opcode::Loop) trips.push_back(inst[0]);
        else if (inst.op == isa::Opcode::EndLoop) trips.pop_back();
        if (!is_transfer(inst.op)) continue;
        const TransferReach r = reach_of(inst, trips);
        if (r.at_zero.empty()) continue;
        const DramExtent e = r.overall();
        const int64_t arg = inst[fields_of(inst.op).arg];
        auto it = touched.find(arg);
        if (it == touched.end()) touched[arg] = e;
        else it->second = {std::min(it->second.lo, e.lo), std::max(it->second.hi, e.hi)};
    }
    std::set<int64_t> walks;  // arguments whose window moves with each transfer
    std::vector<isa::Instruction> prologue;
    for (const auto &kv : touched) {
        const DramWindow initial{0, span};
        if (initial.covers(kv.second)) continue;
        if (kv.second.hi - kv.second.lo <= span) {
            isa::Operand base;
            base.base = kv.second.lo;
            prologue.push_back(window_at(kv.first, base));
        } else {
            walks.insert(kv.first);
        }
    }
    if (prologue.empty() && walks.empty()) return;
    // Pass 2: the windows, at the start and before each transfer of a walking argument.
    std::vector<isa::Instruction> out = prologue;
    out.reserve(stream.size() + prologue.size());
    trips.clear();
    for (const isa::Instruction &inst : stream) {
        if (inst.op == isa::Opcode::Loop) trips.push_back(inst[0]);
        else if (inst.op == isa::Opcode::EndLoop) trips.pop_back();
        if (!is_transfer(inst.op) || !walks.count(inst[fields_of(inst.op).arg])) {
            out.push_back(inst);
            continue;
        }
        const int64_t arg = inst[fields_of(inst.op).arg];
        const TransferReach whole = reach_of(inst, trips);
        const std::vector<isa::Instruction> pieces =
            whole.at_zero.hi - whole.at_zero.lo > span ? split_to_span(inst, span, m.stick_bytes, args[arg].name)
                                                       : std::vector<isa::Instruction>{inst};
        for (const isa::Instruction &piece : pieces) {
            const TransferReach r = reach_of(piece, trips);
            if (!r.at_zero.empty()) {
                isa::Operand base = piece.f[fields_of(piece.op).dram];
                base.base += r.at_zero.lo - piece[fields_of(piece.op).dram];
                out.push_back(window_at(arg, base));
            }
            out.push_back(piece);
        }
    }
    stream = std::move(out);
}

}  // namespace compiler
}  // namespace spyre
