; The same rule on a machine whose cores address 4 KiB of a tensor at a time (assembled and run
; with SPYRE_MACHINE_SET=max_core_span_bytes=4096): a functional run rejects the load past the
; window without first filling half a GiB of input.
.kernel past_the_span
.arg A input f16 extent=[64,128] stick=0 order=[1,0] padded=[64,128]
.arg Out output f16 extent=[64,2] stick=0 order=[1,0] padded=[64,2]
.core 0
.unit dma
  dma.load arg=A dram=0 sp=0 row_bytes=128 valid_bytes=128 rows=1 dram_row_stride=128 sp_row_stride=128 valid_rows=1 planes=1 dram_plane_stride=0 sp_plane_stride=0 valid_planes=1
  dma.load arg=A dram=8192 sp=128 row_bytes=128 valid_bytes=128 rows=1 dram_row_stride=128 sp_row_stride=128 valid_rows=1 planes=1 dram_plane_stride=0 sp_plane_stride=0 valid_planes=1
  dma.store arg=Out dram=0 sp=0 row_bytes=128 rows=2 dram_row_stride=128 sp_row_stride=128 planes=1 dram_plane_stride=0 sp_plane_stride=0
