; one-core matmul with a scaled epilogue: every unit, a parameter, nested loops
.kernel mm1
.param alpha f32
.arg A input f32 extent=[32,16] stick=0
.arg B input f32 extent=[32,32]
.arg T temp f32 extent=[32,16]
.arg C output f32 extent=[32,16] stick=0 order=[1,0] padded=[32,16]
.core 0
.unit dma
loop count=2
  loop count=2
    dma.load arg=A dram=0x400*L0+(2*64)*L1 sp=0 row_bytes=128 valid_bytes=128 rows=8 dram_row_stride=128 sp_row_stride=128 valid_rows=8 planes=1 dram_plane_stride=0 sp_plane_stride=0 valid_planes=1
  endloop
endloop
barrier id=0 participants=1
ring.put dst_core=0 src=0 dst=8192 bytes=128 dst_channel=2
signal channel=0
wait channel=1
dma.store arg=C dram=0 sp=4096 row_bytes=128 rows=16 dram_row_stride=128 sp_row_stride=128 planes=1 dram_plane_stride=0 sp_plane_stride=0
.unit pt
wait channel=0
pt.matmul c=4096 ldc=128 a=0 lda=128 b=2048 ldb=128 m=16 n=32 k=32 in_type=f32 accumulate=0
signal channel=3
.unit sfu
wait channel=3
sfu.mul dst=4096 dst_stride=128 a=4096 a_stride=128 a_mode=0 b=0 b_stride=0 b_mode=3 n=32 rows=16 type=f32 imm=0
sfu.fma dst=4096 dst_stride=128 a=4096 a_stride=128 a_mode=0 b=0 b_stride=0 b_mode=2 c=0 c_stride=0 c_mode=2 n=32 rows=16 type=f32 imm=-1.5e-3
sfu.cast dst=6144 dst_stride=64 dst_type=f16 a=4096 a_stride=128 n=32 rows=16 type=f32
sfu.rowmax dst=8192 dst_stride=4 a=4096 a_stride=128 n=32 rows=16 type=f32 accumulate=1
sfu.exp dst=4096 dst_stride=128 a=4096 a_stride=128 a_mode=1 n=32 rows=16 type=f32 imm=0x3f800000
signal channel=1
