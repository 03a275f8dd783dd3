; vadd32: Out = A + B for f16 tensors of extent [4096, 32] (innermost first),
; spread over the 32 cores of the card.
;
; Layout: stick along dimension 0 (64 f16 lanes per 128-byte stick), so row r
; of a tensor (4096 elements, 8192 bytes) starts at device byte 8192*r.
; Core C owns row C and walks it in 4 tiles of 1024 elements (2048 bytes):
;   DMA:  load the A and B tiles into the scratchpad, signal channel 0,
;         wait on channel 1, store the sum tile.
;   SFU:  wait on channel 0, add, signal channel 1.
; Scratchpad map (per core): A tile at 0, B tile at 2048, sum tile at 4096.
.kernel vadd32
.arg A input f16 extent=[4096,32] stick=0 order=[1,0] padded=[4096,32]
.arg B input f16 extent=[4096,32] stick=0 order=[1,0] padded=[4096,32]
.arg Out output f16 extent=[4096,32] stick=0 order=[1,0] padded=[4096,32]

.core 0-31
.unit dma
loop count=4
  dma.load arg=A dram=8192*C+2048*L0 sp=0 row_bytes=2048 valid_bytes=2048 rows=1 dram_row_stride=8192 sp_row_stride=2048 valid_rows=1 planes=1 dram_plane_stride=0 sp_plane_stride=0 valid_planes=1
  dma.load arg=B dram=8192*C+2048*L0 sp=2048 row_bytes=2048 valid_bytes=2048 rows=1 dram_row_stride=8192 sp_row_stride=2048 valid_rows=1 planes=1 dram_plane_stride=0 sp_plane_stride=0 valid_planes=1
  signal channel=0
  wait channel=1
  dma.store arg=Out dram=8192*C+2048*L0 sp=4096 row_bytes=2048 rows=1 dram_row_stride=8192 sp_row_stride=2048 planes=1 dram_plane_stride=0 sp_plane_stride=0
endloop
.unit sfu
loop count=4
  wait channel=0
  sfu.add dst=4096 dst_stride=2048 a=0 a_stride=2048 a_mode=0 b=2048 b_stride=2048 b_mode=0 n=1024 rows=1 type=f16 imm=0
  signal channel=1
endloop
