// spyre_device_copy (spyre_device.h): device-to-device copies between
// regions of device tensors of the same extents (element x
// of src to element x of dst, x in the buffers' dims as the caller sees them).
//
// Cost model (a DMA; docs/runtime.md, "Device-to-device copies"): the copy is
// decomposed into runs, maximal sequences of elements that are contiguous in
// BOTH the src and the dst stick layouts, taken in dst byte order. A run reads
// every src stick it touches, writes every dst stick it touches, and reads
// too every dst stick it only partly covers (read-modify-write). Bytes are
// sticks x stick_bytes; the time is MachineDescription::copy_dma_cycles of
// those bytes and the runs (one DMA descriptor each, spread over the cores'
// DMA engines), all machine numbers from the machine description. Charged to the profile
// entry "device->device". A whole-tensor copy between identical layouts is
// one run; a copy that transposes the stick dim has single-element runs.
//
// The decomposition walks rows (the elements along the buffer dim that is
// dst's stick dim) and splits each row only where a stick boundary breaks
// contiguity; when dst's sticks along the row are not adjacent, the row is cut
// into one segment per dst stick, looped at the stick dim's place in dst's
// order, so the walk is in dst byte order. Functional mode memcpy's each
// piece (only the element lanes: other lanes and padding of dst sticks are
// left alone). Timing-only mode moves nothing and does not visit pieces: a
// segment's pieces depend only on its length and the lanes its first element
// sits in, so each such pattern is computed once and a segment costs O(rank)
// however many single-element runs it has.
// Assumes src and dst regions do not overlap (checked).
#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>
#include <utility>

#include "device_state.h"
#include "spyre/machine.h"
#include "spyre/spyre_device.h"
#include "tensor_region.h"

namespace spyre {
namespace {

struct CopyPlanTotals {
    int64_t runs = 0;
    int64_t src_sticks = 0;
    int64_t dst_sticks = 0;
    int64_t partial_dst_sticks = 0;  // read before they are written
};

// A contiguous byte range in both tensors, still growing.
struct OpenRun {
    bool open = false;
    int64_t src_begin = 0, src_end = 0, dst_begin = 0, dst_end = 0;
};

int64_t sticks_spanned(int64_t begin, int64_t end, int64_t stick) { return (end - 1) / stick - begin / stick + 1; }

int64_t partial_sticks(int64_t begin, int64_t end, int64_t stick) {
    const bool head = begin % stick != 0, tail = end % stick != 0;
    if ((end - 1) / stick == begin / stick) return (head || tail) ? 1 : 0;
    return (head ? 1 : 0) + (tail ? 1 : 0);
}

void close_run(OpenRun &r, int64_t stick, CopyPlanTotals &t) {
    if (!r.open) return;
    t.runs++;
    t.src_sticks += sticks_spanned(r.src_begin, r.src_end, stick);
    t.dst_sticks += sticks_spanned(r.dst_begin, r.dst_end, stick);
    t.partial_dst_sticks += partial_sticks(r.dst_begin, r.dst_end, stick);
    r.open = false;
}

// Walks the copy in dst byte order as pieces contiguous in both layouts;
// calls piece(src_offset, dst_offset, bytes) for each and returns the run totals.
template <typename Piece>
CopyPlanTotals plan_copy(const TensorRegion &src, const TensorRegion &dst, int64_t stick, bool visit_pieces, Piece piece) {
    const int rank = dst.rank();
    const LayoutAddressing as = layout_addressing(src.tensor.shape, src.tensor.layout, stick);
    const LayoutAddressing ad = layout_addressing(dst.tensor.shape, dst.tensor.layout, stick);
    const int64_t eb = as.element_bytes, lanes = as.lanes;
    const int s_stick = src.tensor.layout.stick_dim, d_stick = dst.tensor.layout.stick_dim;
    // The row dim: the buffer dim that is dst's stick dim, else dst's innermost one.
    int row = -1;
    for (int i = 0; i < rank; i++) {
        if (dst.alloc_dim[i] == d_stick) row = i;
    }
    if (row < 0 && rank > 0) {
        row = 0;
        for (int i = 1; i < rank; i++) {
            if (ad.stride_bytes[dst.alloc_dim[i]] < ad.stride_bytes[dst.alloc_dim[row]]) row = i;
        }
    }
    const int64_t row_extent = row >= 0 ? dst.extent[row] : 1;
    // Along the row, consecutive elements are adjacent bytes in a layout only if the row dim is
    // its stick dim, and across a stick boundary only if that layout's sticks along it are adjacent.
    const bool d_lanes = row >= 0 && dst.alloc_dim[row] == d_stick;
    const bool s_lanes = row >= 0 && src.alloc_dim[row] == s_stick;
    const bool d_across = d_lanes && ad.stride_bytes[d_stick] == stick;
    const bool s_across = s_lanes && as.stride_bytes[s_stick] == stick;
    // The row is walked in segments: one, or, when dst's sticks along it are not adjacent, one
    // per dst stick (the segment index is then a loop at the stick dim's place in dst's order),
    // so the whole walk is in dst byte order and a run is never cut where dst bytes continue.
    const bool split_row = d_lanes && !d_across;
    const int64_t head = split_row ? std::min(row_extent, lanes - dst.origin[d_stick] % lanes) : row_extent;
    const int64_t segments = split_row ? 1 + (row_extent - head + lanes - 1) / lanes : 1;
    struct Loop {
        int dim;  // a buffer dim, or -1: the row's segments
        int64_t extent, dst_stride;
    };
    std::vector<Loop> loops;  // outermost (largest dst stride) first; the last varies fastest
    for (int i = 0; i < rank; i++) {
        if (i != row) loops.push_back(Loop{i, dst.extent[i], ad.stride_bytes[dst.alloc_dim[i]]});
    }
    if (segments > 1) loops.push_back(Loop{-1, segments, ad.stride_bytes[d_stick]});
    std::stable_sort(loops.begin(), loops.end(), [](const Loop &x, const Loop &y) { return x.dst_stride > y.dst_stride; });

    std::vector<int64_t> l(rank, 0), xs(src.origin.size()), xd(dst.origin.size()), idx(loops.size(), 0);
    CopyPlanTotals totals;
    OpenRun run;
    auto offsets_at = [&](int64_t j, int64_t *so, int64_t *dof) {
        if (row >= 0) l[row] = j;
        src.alloc_index(l.data(), xs.data());
        dst.alloc_index(l.data(), xd.data());
        *so = device_offset(as, src.tensor.layout, xs.data());
        *dof = device_offset(ad, dst.tensor.layout, xd.data());
    };
    // The piece starting at element j of a segment of n elements whose first element sits in
    // lanes (lane_d0, lane_s0) of its dst and src sticks.
    auto piece_len = [&](int64_t j, int64_t n, int64_t lane_d0, int64_t lane_s0) {
        int64_t len = n - j;
        if (!d_lanes || !s_lanes) return (int64_t)1;
        if (!d_across) len = std::min(len, lanes - (lane_d0 + j) % lanes);
        if (!s_across) len = std::min(len, lanes - (lane_s0 + j) % lanes);
        return len;
    };
    auto extend = [&](int64_t so, int64_t dof, int64_t bytes) {
        if (run.open && run.src_end == so && run.dst_end == dof) {
            run.src_end += bytes;
            run.dst_end += bytes;
        } else {
            close_run(run, stick, totals);
            run = OpenRun{true, so, so + bytes, dof, dof + bytes};
        }
    };
    // Without pieces to visit (timing-only), a segment's pieces depend only on its length and
    // the lanes its first element sits in: each pattern is computed once; inner pieces are closed runs.
    struct Pattern {
        int64_t pieces = 0, first_len = 0, last_j = 0, last_len = 0;
        CopyPlanTotals inner;
    };
    std::map<std::tuple<int64_t, int64_t, int64_t>, Pattern> patterns;
    auto pattern_of = [&](int64_t n, int64_t lane_d0, int64_t lane_s0) -> const Pattern & {
        const auto key = std::make_tuple(n, lane_d0, lane_s0);
        auto it = patterns.find(key);
        if (it != patterns.end()) return it->second;
        Pattern p;
        for (int64_t j = 0; j < n;) {
            const int64_t len = piece_len(j, n, lane_d0, lane_s0);
            if (p.pieces == 0) p.first_len = len;
            if (p.pieces > 0 && j + len < n) {  // an inner piece: a run of its own
                OpenRun r{true, 0, 0, 0, 0};
                r.src_begin = (s_lanes ? (lane_s0 + j) % lanes : lane_s0) * eb;
                r.dst_begin = (d_lanes ? (lane_d0 + j) % lanes : lane_d0) * eb;
                r.src_end = r.src_begin + len * eb;
                r.dst_end = r.dst_begin + len * eb;
                close_run(r, stick, p.inner);
            }
            p.last_j = j;
            p.last_len = len;
            p.pieces++;
            j += len;
        }
        return patterns.emplace(key, p).first->second;
    };
    while (true) {
        int64_t segment = 0;
        for (size_t k = 0; k < loops.size(); k++) {
            if (loops[k].dim >= 0) l[loops[k].dim] = idx[k];
            else segment = idx[k];
        }
        const int64_t jb = segment == 0 ? 0 : head + (segment - 1) * lanes;
        const int64_t n = std::min(row_extent, segment == 0 ? head : head + segment * lanes) - jb;
        int64_t so, dof;
        offsets_at(jb, &so, &dof);
        const int64_t lane_d0 = xd[d_stick] % lanes, lane_s0 = xs[s_stick] % lanes;
        if (!visit_pieces) {
            const Pattern &p = pattern_of(n, lane_d0, lane_s0);
            extend(so, dof, p.first_len * eb);
            if (p.pieces > 1) {
                close_run(run, stick, totals);
                totals.runs += p.inner.runs;
                totals.src_sticks += p.inner.src_sticks;
                totals.dst_sticks += p.inner.dst_sticks;
                totals.partial_dst_sticks += p.inner.partial_dst_sticks;
                offsets_at(jb + p.last_j, &so, &dof);
                extend(so, dof, p.last_len * eb);
            }
        } else {
            for (int64_t j = 0; j < n;) {
                offsets_at(jb + j, &so, &dof);
                const int64_t len = piece_len(j, n, lane_d0, lane_s0);
                piece(so, dof, len * eb);
                extend(so, dof, len * eb);
                j += len;
            }
        }
        int k = (int)loops.size() - 1;
        for (; k >= 0; k--) {
            if (++idx[k] < loops[k].extent) break;
            idx[k] = 0;
        }
        if (k < 0) break;
    }
    close_run(run, stick, totals);
    return totals;
}

// The box a region covers in its allocation's index space, per allocation dim [lo, hi).
void region_box(const TensorRegion &r, std::vector<int64_t> *lo, std::vector<int64_t> *hi) {
    *lo = r.origin;
    *hi = r.origin;
    for (int64_t &h : *hi) h += 1;
    for (int i = 0; i < r.rank(); i++) (*hi)[r.alloc_dim[i]] = r.origin[r.alloc_dim[i]] + r.extent[i];
}

// First and one-past-last device byte the region's elements occupy.
void region_byte_span(const TensorRegion &r, int64_t stick, int64_t *first, int64_t *end) {
    std::vector<int64_t> lo, hi;
    region_box(r, &lo, &hi);
    const LayoutAddressing a = layout_addressing(r.tensor.shape, r.tensor.layout, stick);
    for (size_t k = 0; k < hi.size(); k++) hi[k] -= 1;
    // Offsets grow with every index, so the box's corners bound it.
    *first = device_offset(a, r.tensor.layout, lo.data());
    *end = device_offset(a, r.tensor.layout, hi.data()) + a.element_bytes;
}

bool regions_overlap(const TensorRegion &a, const TensorRegion &b, int64_t stick) {
    if (a.tensor.block != b.tensor.block) return false;
    if (a.tensor.shape.extent == b.tensor.shape.extent && a.tensor.layout == b.tensor.layout) {
        std::vector<int64_t> alo, ahi, blo, bhi;
        region_box(a, &alo, &ahi);
        region_box(b, &blo, &bhi);
        for (size_t k = 0; k < alo.size(); k++) {
            if (ahi[k] <= blo[k] || bhi[k] <= alo[k]) return false;  // disjoint along dim k
        }
        return true;
    }
    // Two records of the same bytes in other shapes (views, reshapes): their byte spans.
    int64_t af, ae, bf, be;
    region_byte_span(a, stick, &af, &ae);
    region_byte_span(b, stick, &bf, &be);
    return af < be && bf < ae;
}

void device_copy(const halide_buffer_t *src, halide_buffer_t *dst) {
    const char *where = "spyre_device_copy";
    const std::string w = where;
    if (src == nullptr || dst == nullptr) throw RuntimeError(spyre_error_bad_argument, w + ": null halide_buffer_t pointer");
    const std::string shapes = "src " + buffer_shape_string(src) + ", dst " + buffer_shape_string(dst);
    if (!(src->type == dst->type)) {
        throw RuntimeError(spyre_error_buffer_mismatch, w + ": the element types differ (" + shapes + ")");
    }
    if (src->dimensions != dst->dimensions) {
        throw RuntimeError(spyre_error_buffer_mismatch, w + ": the ranks differ (" + shapes + ")");
    }
    for (int d = 0; d < src->dimensions; d++) {
        if (src->dim[d].extent != dst->dim[d].extent) {
            throw RuntimeError(spyre_error_buffer_mismatch, w + ": the extents of dimension " + std::to_string(d) +
                                                                " differ (" + shapes + "); crop one of them to the other's shape");
        }
    }
    auto resolve = [&](const halide_buffer_t *b, const char *which) {
        try {
            return resolve_region(b, (w + ": " + which).c_str());
        } catch (const RuntimeError &e) {
            throw RuntimeError(e.code, std::string(e.what()) + " (" + shapes + ")");
        }
    };
    const TensorRegion rs = resolve(src, "src");
    const TensorRegion rd = resolve(dst, "dst");
    const int64_t stick = default_machine().stick_bytes;
    if (src->flags & halide_buffer_flag_host_dirty) {
        throw RuntimeError(spyre_error_bad_argument, w + ": src is host-dirty (" + shapes +
                                                         "): its device copy is stale; copy_to_device it first");
    }
    if (dst->flags & halide_buffer_flag_host_dirty) {
        // Its host data would be uploaded over the copied elements at the next use.
        throw RuntimeError(spyre_error_bad_argument, w + ": dst is host-dirty (" + shapes +
                                                         "): its host data is newer than its device copy; "
                                                         "copy_to_device it first (or clear host-dirty)");
    }
    if (regions_overlap(rs, rd, stick)) {
        throw RuntimeError(spyre_error_bad_argument, w + ": src and dst overlap in the same device allocation (" + shapes +
                                                         "); copy through a separate tensor");
    }
    const bool timing = timing_only();
    if (!timing && !rs.tensor.block->holds_values) {
        throw RuntimeError(spyre_error_bad_argument, w + ": src holds no values (" + shapes +
                                                         "): it was written in timing-only mode; write it again in "
                                                         "functional mode first");
    }
    const uint8_t *from = rs.tensor.block->data();
    uint8_t *to = rd.tensor.block->data();
    CopyPlanTotals t;
    if (timing) {
        t = plan_copy(rs, rd, stick, /*visit_pieces=*/false, [](int64_t, int64_t, int64_t) {});
        rd.tensor.block->holds_values = false;
    } else {
        t = plan_copy(rs, rd, stick, /*visit_pieces=*/true,
                      [&](int64_t so, int64_t dof, int64_t n) { std::memcpy(to + dof, from + so, (size_t)n); });
        if (rd.whole()) rd.tensor.block->holds_values = true;
    }
    const MachineDescription &m = default_machine();
    const int64_t read = (t.src_sticks + t.partial_dst_sticks) * stick, write = t.dst_sticks * stick;
    const double us = m.copy_dma_cycles((double)read, (double)write, (double)t.runs) / (m.clock_ghz * 1e3);
    record_transfer(kDeviceToDevice, read, write, us);
    dst->flags = (dst->flags | halide_buffer_flag_device_dirty) & ~(uint64_t)halide_buffer_flag_host_dirty;
}

}  // namespace
}  // namespace spyre

extern "C" int spyre_device_copy(void *user_context, const halide_buffer_t *src, halide_buffer_t *dst) {
    return spyre::guarded(user_context, "spyre_device_copy", [&] {
        spyre::device_copy(src, dst);
        return 0;
    });
}
