; 32 cores x 65535 x 32766 dma.loads: a valid program (each stream under the 2^32 dynamic
; instructions the validator allows) of 1.4e11 instructions, hours of simulation.
; For the tool tests of spyre-run --max-instructions and --max-cycles.
.kernel endless_dma
.arg A input f16 extent=[64] stick=0 order=[0] padded=[64]
.core 0-31
.unit dma
loop count=65535
loop count=32766
  dma.load arg=A dram=0 sp=0 row_bytes=128 valid_bytes=128 rows=1 dram_row_stride=128 sp_row_stride=128 valid_rows=1 planes=1 dram_plane_stride=0 sp_plane_stride=0 valid_planes=1
endloop
endloop
