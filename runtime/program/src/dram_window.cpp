// The DRAM runs and extent of a DMA transfer (see dram_window.h).
#include "spyre/dram_window.h"

#include <algorithm>

namespace spyre {

DmaDramRuns dma_dram_runs(isa::Opcode op, const int64_t *f) {
    if (op == isa::Opcode::DmaLoad) {
        namespace F = isa::field::DmaLoad;
        return {f[F::dram],     f[F::valid_bytes], std::min(f[F::valid_rows], f[F::rows]), f[F::dram_row_stride],
                std::min(f[F::valid_planes], f[F::planes]), f[F::dram_plane_stride]};
    }
    namespace F = isa::field::DmaStore;
    return {f[F::dram], f[F::row_bytes], f[F::rows], f[F::dram_row_stride], f[F::planes], f[F::dram_plane_stride]};
}

DramExtent DmaDramRuns::extent() const {
    if (len == 0 || rows == 0 || planes == 0) return {base, base};
    return {base + std::min<int64_t>(0, (rows - 1) * row_stride) + std::min<int64_t>(0, (planes - 1) * plane_stride),
            base + std::max<int64_t>(0, (rows - 1) * row_stride) + std::max<int64_t>(0, (planes - 1) * plane_stride) +
                len};
}

}  // namespace spyre
