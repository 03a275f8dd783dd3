.kernel bad
.machine 0x1234
.param p i32
.arg X output i8 extent=[128] stick=0 order=[0] padded=[128]
.core 3-5
.unit sfu
loop count=3
  sfu.copy dst=C*128+64*L0 dst_stride=0 a=0 a_stride=0 a_mode=2 n=1 rows=1 type=i8 imm=7
  sfu.colsum dst=0 dst_stride=0 a=0 a_stride=0 n=1 rows=1 type=i32 accumulate=0
