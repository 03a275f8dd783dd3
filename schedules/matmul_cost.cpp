// The matmul's terms of the planning framework (matmul_cost.h).
#include "matmul_cost.h"

#include <algorithm>
#include <cmath>

#include "planner.h"
#include "schedule_arithmetic.h"
#include "spyre_schedule.h"

namespace spyre {

using namespace Halide;

int64_t matmul_footprint(int tm, int tn, int tk, int bytes, int out_bytes, int stages, bool residual, bool swiglu,
                         int a_resident_kp) {
    const int64_t tile = (int64_t)tm * tn, out_tile = swiglu ? tile / 2 : tile;
    return (int64_t)tm * (a_resident_kp > 0 ? a_resident_kp : tk) * bytes + (int64_t)tk * tn * bytes + tile * 4 + out_tile * 4 * stages + out_tile * out_bytes +
           (int64_t)tn * (out_bytes + 4) + 4LL * tn * 4 + (residual ? out_tile * out_bytes + 2LL * tn * 4 : 0);
}

int64_t second_copies(int tm, int tn, int tk, int bytes, bool a_once) {
    return (a_once ? 0 : (int64_t)tm * tk * bytes) + (int64_t)tk * tn * bytes;
}

planning::PtPipeline matmul_pipeline(const MatmulShape &shape, const MatmulCandidate &c, const MachineDescription &m) {
    planning::PtPipeline p;
    p.tm = c.tm;
    p.tn = c.tn;
    p.tk = c.tk;
    p.kp = c.kp;
    p.cm = c.cm;
    p.cn = c.cn;
    p.mt = c.mt;
    p.nt = c.nt;
    p.in_bytes = shape.dtype.bytes();
    p.out_bytes = matmul_output_type(shape).bytes();
    p.pt_type_factor = planning::pt_type_factor(shape.dtype, m);
    p.double_buffer = c.double_buffer;
    p.a_shared = c.a_shared;
    p.b_shared = c.b_shared;
    p.b_gathered = c.b_gathered;
    p.a_resident = c.a_resident;
    p.acc_ahead = c.acc_ahead;
    p.b_resident = c.b_resident;
    p.result_double_buffer = c.result_double_buffer;
    p.a_per_row_of_tiles = true;  // schedule_matmul_spyre stages whole-K A at the row of tiles (mo), and a resident panel
    p.bias = true;
    p.residual = shape.residual;
    // The activation's SFU passes over the fp32 tile, each charged as a transcendental one:
    // gelu's act_ has four definitions (x c1; (..) x + c0; (..) x; tanh(..) / 2 + 1/2); silu's
    // two (exp(-x) + 1; x / (..)) are charged the same four, an upper bound.
    const bool transcendental = shape.activation == Activation::Gelu || shape.activation == Activation::Silu;
    p.epilogue_transcendental_passes = transcendental ? 4.0 * epilogue_stages(shape.activation) : 0.0;
    // swiglu: C has half the accumulator's columns; silu's four passes (as above) and the
    // product with the up half (a simple one) run over C's half of the fp32 tile.
    if (shape.activation == Activation::Swiglu) {
        p.out_fraction = 0.5;
        p.epilogue_transcendental_passes = 0.5 * 4.0;
        p.epilogue_simple_passes = 0.5;
    }
    // The row scale: acc * scale + bias, two simple passes over the accumulator's tile.
    if (shape.row_scale) p.epilogue_simple_passes += 2.0;
    return p;
}

}  // namespace spyre
