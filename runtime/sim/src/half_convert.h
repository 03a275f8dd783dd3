// Bulk IEEE binary16 <-> binary32 conversion for the simulator's hot loops:
// F16C instructions when the host CPU has them (checked once at run time),
// the exact scalar conversion of dtype.h otherwise. Both round to nearest
// even, so results do not depend on the host.
#pragma once

#include <cstdint>

namespace spyre {
namespace sim {

void halves_to_floats(const uint16_t *in, float *out, int64_t n);
void floats_to_halves(const float *in, uint16_t *out, int64_t n);

}  // namespace sim
}  // namespace spyre
