; One core reads both ends of a 512 MiB tensor without moving its DRAM window:
; the second load is past max_core_span_bytes (256 MiB - 4 KiB) and must be a rule
; violation in timing-only and functional runs (dram_window.h).
.kernel past_the_span
.arg A input f16 extent=[64,4194304] stick=0 order=[1,0] padded=[64,4194304]
.arg Out output f16 extent=[64,2] stick=0 order=[1,0] padded=[64,2]
.core 0
.unit dma
  dma.load arg=A dram=0 sp=0 row_bytes=128 valid_bytes=128 rows=1 dram_row_stride=128 sp_row_stride=128 valid_rows=1 planes=1 dram_plane_stride=0 sp_plane_stride=0 valid_planes=1
  dma.load arg=A dram=536870784 sp=128 row_bytes=128 valid_bytes=128 rows=1 dram_row_stride=128 sp_row_stride=128 valid_rows=1 planes=1 dram_plane_stride=0 sp_plane_stride=0 valid_planes=1
  dma.store arg=Out dram=0 sp=0 row_bytes=128 rows=2 dram_row_stride=128 sp_row_stride=128 planes=1 dram_plane_stride=0 sp_plane_stride=0
