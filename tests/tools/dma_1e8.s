; 32 cores x 65535 x 24 dma.loads of one stick each: 104,856,032 dynamic instructions
; (50.3 million DMA transfers). docs/reliability.md, "Bounded runs": a timing-only run
; of it holds no per-instruction state (peak RSS independent of the instruction count).
.kernel dma_1e8
.arg A input f16 extent=[64] stick=0 order=[0] padded=[64]
.core 0-31
.unit dma
loop count=65535
loop count=24
  dma.load arg=A dram=0 sp=128*L1 row_bytes=128 valid_bytes=128 rows=1 dram_row_stride=128 sp_row_stride=128 valid_rows=1 planes=1 dram_plane_stride=0 sp_plane_stride=0 valid_planes=1
endloop
endloop
