// gen_rmsnorm: RMS normalization over the innermost dimension,
//   out(x, y) = v / sqrt(sum_x v^2 / X + eps) * weight(x),
// registered from the shared row-normalization generator (norm_generator.h).
#include "norm_generator.h"

using RmsNorm = spyre::NormGenerator</*Centered=*/false>;

HALIDE_REGISTER_GENERATOR(RmsNorm, rmsnorm)
