// gen_layernorm: layer normalization over the innermost dimension,
//   out(x, y) = (v - mean(y)) / sqrt(var(y) + eps) * weight(x) + bias(x),
// registered from the shared row-normalization generator (norm_generator.h).
#include "norm_generator.h"

using LayerNorm = spyre::NormGenerator</*Centered=*/true>;

HALIDE_REGISTER_GENERATOR(LayerNorm, layernorm)
