// The model shapes `llm --model NAME` runs: the configuration this executable
// was built for (its kernels linked, kernel_table.h) and shapes whose kernels
// are compiled on first use through the kernel cache (kernel_plan.h), such as
// a Llama-3-70B-shaped decoder, which needs several cards.
#pragma once

#include <string>
#include <vector>

#include "decoder.h"

namespace llm {

// The names --model accepts, the build's own first.
std::vector<std::string> model_names();
// The shape of `name`; throws listing the known names if there is none.
ModelShape model_shape(const std::string &name);

}  // namespace llm
