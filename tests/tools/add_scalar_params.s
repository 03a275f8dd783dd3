; Out = A + k (k an i32 run-time parameter); `unused` is an f32 parameter the
; program declares but does not read. For the tool tests of spyre-run --param.
.kernel add_scalar_params
.param k i32
.param unused f32
.arg A input i32 extent=[32] stick=0 order=[0] padded=[32]
.arg Out output i32 extent=[32] stick=0 order=[0] padded=[32]
.core 0
.unit dma
  dma.load arg=A dram=0 sp=0 row_bytes=128 valid_bytes=128 rows=1 dram_row_stride=128 sp_row_stride=128 valid_rows=1 planes=1 dram_plane_stride=0 sp_plane_stride=0 valid_planes=1
  signal channel=0
  wait channel=1
  dma.store arg=Out dram=0 sp=128 row_bytes=128 rows=1 dram_row_stride=128 sp_row_stride=128 planes=1 dram_plane_stride=0 sp_plane_stride=0
.unit sfu
  wait channel=0
  sfu.add dst=128 dst_stride=128 a=0 a_stride=128 a_mode=0 b=0 b_stride=0 b_mode=3 n=32 rows=1 type=i32 imm=0
  signal channel=1
