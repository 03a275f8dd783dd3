// The extent of a DMA transfer in DRAM (see dram_window.h).
#include "spyre/dram_window.h"

#include <algorithm>

namespace spyre {

DramExtent dma_dram_extent(isa::Opcode op, const int64_t *f) {
    int64_t base, len, rows, row_stride, planes, plane_stride;
    if (op == isa::Opcode::DmaLoad) {
        namespace F = isa::field::DmaLoad;
        base = f[F::dram], len = f[F::valid_bytes], rows = std::min(f[F::valid_rows], f[F::rows]);
        row_stride = f[F::dram_row_stride], planes = std::min(f[F::valid_planes], f[F::planes]);
        plane_stride = f[F::dram_plane_stride];
    } else {
        namespace F = isa::field::DmaStore;
        base = f[F::dram], len = f[F::row_bytes], rows = f[F::rows], row_stride = f[F::dram_row_stride];
        planes = f[F::planes], plane_stride = f[F::dram_plane_stride];
    }
    if (len == 0 || rows == 0 || planes == 0) return {base, base};
    return {base + std::min<int64_t>(0, (rows - 1) * row_stride) + std::min<int64_t>(0, (planes - 1) * plane_stride),
            base + std::max<int64_t>(0, (rows - 1) * row_stride) + std::max<int64_t>(0, (planes - 1) * plane_stride) +
                len};
}

}  // namespace spyre
