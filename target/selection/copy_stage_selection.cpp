// Instruction selection for copy_to_host() stages: the window a
// halide_buffer_copy moves (from the _halide_buffer_init that describes its
// destination) becomes one strided DMA load (see core_selector.h).
#include "selection/core_selector.h"

namespace spyre {
namespace compiler {
namespace selection {

bool CoreSelector::record_copy_destination(const LetStmt *op) {
    const std::string suffix = ".buffer";
    if (op->name.size() <= suffix.size() || op->name.compare(op->name.size() - suffix.size(), suffix.size(), suffix) != 0) {
        return false;
    }
    std::map<std::string, Expr> local;
    Expr v = op->value;
    while (const Let *l = v.as<Let>()) {
        local[l->name] = l->value;
        v = l->body;
    }
    const Call *init = v.as<Call>();
    if (!init || init->name != "_halide_buffer_init" || init->args.size() < 3) return false;
    Expr dims = init->args[1];
    if (const Variable *dv = dims.as<Variable>()) {
        auto it = local.find(dv->name);
        if (it != local.end()) dims = it->second;
    }
    const Call *ms = dims.as<Call>();
    const Variable *host = init->args[2].as<Variable>();
    if (!ms || !ms->is_intrinsic(Call::make_struct) || !host || !scratchpad_buffer(host->name)) return false;
    CopyWindow w;
    w.allocation = host->name;
    w.dims = ms->args;
    copy_windows_[op->name] = w;
    return true;
}

bool CoreSelector::select_buffer_copy(const Expr &value, std::vector<ProgramNode> &out) {
    const Call *c = value.as<Call>();
    if (!c || c->name != "halide_buffer_copy" || c->args.size() != 3) return false;
    const Variable *src = c->args[0].as<Variable>();
    const Variable *dst = c->args[2].as<Variable>();
    if (!src || !dst) fail("halide_buffer_copy with computed buffer arguments is not supported");
    const std::string src_name = src->name.substr(0, src->name.size() - std::string(".buffer").size());
    const KernelTensor *t = dram_tensor(src_name);
    auto w = copy_windows_.find(dst->name);
    if (!t || w == copy_windows_.end()) {
        fail("copy_to_host() stage from '" + src->name + "' to '" + dst->name +
             "': only copies from a kernel input into a scratchpad buffer become DMA");
    }
    const BufferInfo *b = scratchpad_buffer(w->second.allocation);
    std::vector<int> host_order;
    for (int d = (int)t->padded.size() - 1; d >= 0; d--) host_order.push_back(d);
    if (t->layout.stick_dim != 0 || (!t->layout.order.empty() && t->layout.order != host_order)) {
        fail("copy_to_host() stage from '" + src_name + "': its device layout " + layout_to_string(t->layout) +
             " is not the default one, which is all copy_to_host() stages support; stage it with " + src_name +
             ".in() instead");
    }
    const int64_t eb = t->type.bytes();
    const size_t rank = w->second.dims.size() / 4;
    SymOperand dram = constant(0);
    std::vector<int64_t> extent, local_stride, src_stride;
    int64_t stride = 1;
    for (size_t d = 0; d < rank; d++) {
        auto min = env_.affine_in_loops(w->second.dims[4 * d]);
        if (!min) fail("the window of the copy into '" + w->second.allocation + "' is not affine in the core's loops");
        const int64_t e = env_.evaluate(w->second.dims[4 * d + 1], {});
        const int64_t ls = env_.evaluate(w->second.dims[4 * d + 2], {});
        for (size_t i = 0; i < min->coef.size(); i++) dram.set_coef(i, dram.coef_at(i) + min->coef[i] * stride * eb);
        dram.base += min->base * stride * eb;
        extent.push_back(e);
        local_stride.push_back(ls);
        src_stride.push_back(stride);
        stride *= d < t->padded.size() ? t->padded[d] : 1;
    }
    std::vector<int> dims;  // the dimensions that move more than one element, beyond the first
    for (size_t d = 1; d < rank; d++) {
        if (extent[d] > 1) dims.push_back((int)d);
    }
    if (dims.size() > 2) fail("copy_to_host() stage into '" + w->second.allocation + "' moves more than 3 dimensions");
    if (rank == 0 || local_stride[0] != 1) fail("copy_to_host() stage into '" + w->second.allocation + "' is not dense in dimension 0");
    const int64_t row = extent[0] * eb;
    if (row % m_.stick_bytes != 0) {
        fail("vectors that are not whole sticks: the copy into '" + w->second.allocation + "' moves rows of " +
             std::to_string(row) + " bytes; tile dimension 0 by whole sticks");
    }
    check_stick_aligned(dram, src_name);
    int64_t rows = 1, drs = row, srs = row, planes = 1, dps = 0, sps = 0;
    if (!dims.empty()) {
        rows = extent[dims[0]];
        drs = src_stride[dims[0]] * eb;
        srs = local_stride[dims[0]] * eb;
    }
    if (dims.size() > 1) {
        planes = extent[dims[1]];
        dps = src_stride[dims[1]] * eb;
        sps = local_stride[dims[1]] * eb;
    }
    namespace L = isa::field::DmaLoad;
    emit(out, isa::Opcode::DmaLoad,
         {{L::arg, constant(t->arg_index)}, {L::dram, dram}, {L::sp, constant(b->address)}, {L::row_bytes, constant(row)},
          {L::valid_bytes, constant(row)}, {L::rows, constant(rows)}, {L::dram_row_stride, constant(drs)},
          {L::sp_row_stride, constant(srs)}, {L::valid_rows, constant(rows)}, {L::planes, constant(planes)},
          {L::dram_plane_stride, constant(dps)}, {L::sp_plane_stride, constant(sps)}, {L::valid_planes, constant(planes)}});
    return true;
}

}  // namespace selection
}  // namespace compiler
}  // namespace spyre
