// spyre_device_reshape (spyre_device.h): a whole device tensor seen with
// another shape of the same elements in the same order (dim 0 fastest), when
// the device bytes are identical, so nothing moves.
//
// The rule, checked constructively: drop the unit dims (unpadded, extent 1)
// of both shapes (a src unit dim padded in the layout, the stick dim of
// extent 1 among them, is kept, and becomes the next dst unit dim, keeping its
// padding and, for the stick dim, being dst's stick dim); group the remaining dims of src and dst into runs with equal
// products (a dim kept, split or merged). A kept dim keeps its padding and
// place in the layout order. A split or merged group must be unpadded in src,
// its src dims adjacent in the layout order (outer to inner), and if it holds
// the stick dim that must be its innermost dim and the innermost dst dim of
// the group must be a whole number of sticks (the stick index is then split or
// merged like any other dim, lanes stay lanes). dst's unit dims go outermost.
// The resulting layout is checked to give every probed element the same byte
// offset as in src. The view aliases src's block (as spyre_device_view).
#include <algorithm>

#include "device_state.h"
#include "spyre/machine.h"
#include "spyre/spyre_device.h"
#include "tensor_region.h"

namespace spyre {
namespace {

std::string dims_text(const std::vector<int> &dims) {
    std::string s;
    for (size_t i = 0; i < dims.size(); i++) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s;
}

void reshape(const halide_buffer_t *src, halide_buffer_t *dst) {
    const std::string w = "spyre_device_reshape";
    if (dst == nullptr) throw RuntimeError(spyre_error_bad_argument, w + ": null halide_buffer_t pointer");
    const TensorRegion r = resolve_region(src, w.c_str());
    const std::string shapes = "src " + r.shape_string() + ", dst " + buffer_shape_string(dst);
    auto refuse = [&](const std::string &why) {
        throw RuntimeError(spyre_error_buffer_mismatch, w + ": " + why + " (" + shapes + ")");
    };
    DeviceLayout L;
    if (!r.as_layout(&L)) refuse("src is a crop or slice of a device tensor; copy it into its own tensor with spyre_device_copy first");
    if (dst->device != 0) throw RuntimeError(spyre_error_bad_argument, w + ": dst already has a device allocation");
    if (src->flags & halide_buffer_flag_host_dirty) {
        throw RuntimeError(spyre_error_bad_argument, w + ": src is host-dirty (" + shapes +
                                                         "): the view would see its stale device copy; copy_to_device it first");
    }
    DType dt;
    if (!dtype_of(dst->type, &dt) || dt != r.tensor.shape.dtype) refuse("the element types differ");
    if (dst->dimensions < 1 || dst->dimensions > SPYRE_MAX_DIMENSIONS) refuse("dst must have 1 to 8 dimensions");
    const TensorShape S{dt, r.extent};
    TensorShape D{dt, {}};
    for (int d = 0; d < dst->dimensions; d++) {
        if (dst->dim[d].extent < 1) refuse("dst dimension " + std::to_string(d) + " has extent < 1");
        D.extent.push_back(dst->dim[d].extent);
    }
    int64_t ns = 1, nd = 1;
    for (int64_t e : S.extent) ns *= e;
    for (int64_t e : D.extent) nd *= e;
    if (ns != nd) refuse("the element counts differ (" + std::to_string(ns) + " and " + std::to_string(nd) + ")");
    const int64_t stick = default_machine().stick_bytes;
    const int64_t lanes = stick / dtype_bytes(dt);

    // The dims that are not unit dims; a src unit dim that is padded in the
    // layout is kept too and must become a dst unit dim in the same place
    // (e.g. (1024, 1) with its row padded to 8, seen as (128, 8, 1)).
    std::vector<int> sd, dd;
    std::vector<bool> padded_unit(S.extent.size(), false);
    for (int d = 0; d < (int)S.extent.size(); d++) {
        if (S.extent[d] != 1) {
            sd.push_back(d);
        } else if (L.padded[d] != 1 || d == L.stick_dim) {
            sd.push_back(d);
            padded_unit[d] = true;
        }
    }
    for (int d = 0; d < (int)D.extent.size(); d++) {
        if (D.extent[d] != 1) dd.push_back(d);
    }
    if (sd.empty()) refuse("a tensor of one element has no stick dimension to keep");

    DeviceLayout out;
    out.padded.assign(D.extent.size(), 1);
    out.stick_dim = -1;
    std::vector<std::vector<int>> emit_at(S.extent.size());  // dst dims (outer first) placed where src dim sits in the order
    std::vector<bool> dst_used(D.extent.size(), false);
    size_t i = 0, j = 0;
    int last_dst = -1;
    while (i < sd.size()) {
        if (padded_unit[sd[i]]) {
            // The next dst unit dim after the ones already placed and before the next dst dim that is not one.
            const int limit = j < dd.size() ? dd[j] : (int)D.extent.size();
            int u = last_dst + 1;
            while (u < limit && D.extent[u] != 1) u++;
            if (u >= limit) {
                refuse("src dimension " + std::to_string(sd[i]) + " has extent 1 but is padded in its device layout (" +
                       std::to_string(L.padded[sd[i]]) + "), and dst has no dimension of extent 1 in its place");
            }
            out.padded[u] = L.padded[sd[i]];
            if (sd[i] == L.stick_dim) out.stick_dim = u;
            emit_at[sd[i]] = {u};
            dst_used[u] = true;
            last_dst = u;
            i++;
            continue;
        }
        if (j >= dd.size()) refuse("the extents do not split or merge into each other");
        std::vector<int> sg{sd[i]}, dg{dd[j]};
        int64_t ps = S.extent[sd[i]], pd = D.extent[dd[j]];
        while (ps != pd) {
            if (ps < pd) {
                if (++i >= sd.size()) refuse("the extents do not split or merge into each other");
                sg.push_back(sd[i]);
                ps *= S.extent[sd[i]];
            } else {
                if (++j >= dd.size()) refuse("the extents do not split or merge into each other");
                dg.push_back(dd[j]);
                pd *= D.extent[dd[j]];
            }
        }
        i++;
        j++;
        last_dst = dg.back();
        const bool has_stick = std::find(sg.begin(), sg.end(), L.stick_dim) != sg.end();
        if (sg.size() == 1 && dg.size() == 1) {
            out.padded[dg[0]] = L.padded[sg[0]];
            if (has_stick) out.stick_dim = dg[0];
            emit_at[sg[0]] = dg;
            continue;
        }
        for (int d : sg) {
            if (L.padded[d] != S.extent[d]) {
                refuse("src dimension " + std::to_string(d) + " is padded (extent " + std::to_string(S.extent[d]) +
                       ", padded " + std::to_string(L.padded[d]) + "), so splitting or merging it would move data");
            }
        }
        // sg (inner to outer) must sit in the order as sg.back(), ..., sg.front(), adjacent.
        const auto pos = std::find(L.order.begin(), L.order.end(), sg.back()) - L.order.begin();
        for (size_t k = 0; k < sg.size(); k++) {
            if (pos + (long)k >= (long)L.order.size() || L.order[pos + k] != sg[sg.size() - 1 - k]) {
                refuse("src dimensions " + dims_text(sg) + " are split or merged but are not adjacent, outer to inner, in "
                       "the device layout's order " + layout_to_string(L));
            }
        }
        if (has_stick) {
            if (L.stick_dim != sg.front()) refuse("the stick dimension is not the innermost of the dimensions merged with it");
            if (D.extent[dg.front()] % lanes != 0) {
                refuse("dst dimension " + std::to_string(dg.front()) + " (extent " + std::to_string(D.extent[dg.front()]) +
                       ") splits the stick dimension, but not at a whole number of sticks (" + std::to_string(lanes) +
                       " elements)");
            }
            out.stick_dim = dg.front();
        }
        for (int d : dg) out.padded[d] = D.extent[d];
        emit_at[sg.back()] = std::vector<int>(dg.rbegin(), dg.rend());
    }
    if (i != sd.size() || j != dd.size()) refuse("the extents do not split or merge into each other");
    if (out.stick_dim < 0) refuse("the stick dimension would be lost");
    for (int d = 0; d < (int)D.extent.size(); d++) {
        if (D.extent[d] == 1 && !dst_used[d]) out.order.push_back(d);
    }
    for (int d : L.order) {
        for (int e : emit_at[d]) out.order.push_back(e);
    }
    try {
        check_layout(D, out, stick, w);
    } catch (const Error &e) {
        refuse(e.what());
    }
    const LayoutAddressing as = layout_addressing(S, L, stick), ad = layout_addressing(D, out, stick);
    if (as.total_bytes != ad.total_bytes) refuse("the device images differ in size");
    // Probe elements (by linear index, dim 0 fastest) at stick edges and ends.
    std::vector<int64_t> probes{0, 1, lanes - 1, lanes, 2 * lanes - 1, ns / 2, ns - 2, ns - 1};
    for (int64_t e : S.extent) probes.push_back(e), probes.push_back(e - 1);
    for (int64_t e : D.extent) probes.push_back(e), probes.push_back(e - 1);
    for (int64_t n : probes) {
        if (n < 0 || n >= ns) continue;
        std::vector<int64_t> xs(S.extent.size()), xd(D.extent.size());
        int64_t q = n;
        for (size_t d = 0; d < xs.size(); d++) xs[d] = q % S.extent[d], q /= S.extent[d];
        q = n;
        for (size_t d = 0; d < xd.size(); d++) xd[d] = q % D.extent[d], q /= D.extent[d];
        if (device_offset(as, L, xs.data()) != device_offset(ad, out, xd.data())) {
            refuse("the device bytes would differ (element " + std::to_string(n) + ")");
        }
    }
    dst->device = register_tensor(whole_tensor_record(D, out, r.tensor.block, dst));
    dst->device_interface = spyre_device_interface();
    dst->flags &= ~(uint64_t)halide_buffer_flag_host_dirty;
    if ((src->flags & halide_buffer_flag_device_dirty) || dst->host != nullptr) dst->flags |= halide_buffer_flag_device_dirty;
}

}  // namespace
}  // namespace spyre

extern "C" int spyre_device_reshape(void *user_context, const halide_buffer_t *src, halide_buffer_t *dst) {
    return spyre::guarded(user_context, "spyre_device_reshape", [&] {
        spyre::reshape(src, dst);
        return 0;
    });
}
