// Schedules of the 2-D valid convolution (see conv2d_schedule.h): the shape
// checks, the planner of the Spyre schedule, the host and Spyre schedules.
#include "conv2d_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "spyre/machine.h"
#include "planner.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

namespace {

// Candidate tile widths: the output row cut into j nearly equal pieces of whole PT passes.
std::vector<int> row_pieces(int extent, int pass_rows, int cap) {
    std::vector<int> out;
    for (int j = 1; j <= extent; j++) {
        const int t = round_up((extent + j - 1) / j, pass_rows);
        if (t <= cap && std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
        if (t == pass_rows) break;
    }
    return out;
}

}  // namespace

void check_conv2d_shape(const Conv2dShape &s) {
    _halide_user_assert(s.dtype == Float(16) || s.dtype == Float(32))
        << "conv2d: dtype must be float16 or float32, not " << s.dtype;
    _halide_user_assert(s.ci >= 1 && s.co >= 1 && s.width >= 1 && s.height >= 1 && s.kw >= 1 && s.kh >= 1 && s.batch >= 1)
        << "conv2d: ci, co, width, height, kw, kh and batch must be positive (got ci=" << s.ci << " co=" << s.co
        << " width=" << s.width << " height=" << s.height << " kw=" << s.kw << " kh=" << s.kh << " batch=" << s.batch
        << ")";
    _halide_user_assert(s.kw <= s.width)
        << "conv2d: kw=" << s.kw << " is wider than the input (width=" << s.width
        << "): the convolution is \"valid\" (no padding), so the filter must fit inside the input; pad the input first";
    _halide_user_assert(s.kh <= s.height)
        << "conv2d: kh=" << s.kh << " is taller than the input (height=" << s.height
        << "): the convolution is \"valid\" (no padding), so the filter must fit inside the input; pad the input first";
    _halide_user_assert(s.activation == Activation::None || s.activation == Activation::Relu)
        << "conv2d: activation must be none or relu";
}

// The candidate space: output tiles of tn channels (whole sticks up to 512) x tx pixels
// (the output row cut into nearly equal pieces of whole PT passes) x ty rows (up to
// 32); per tile, core counts cx along the pixels (divisors of the row's tiles) and cy
// along the rows (the rows padded to ty x cy, no core of padding rows only), the even
// split of the batch and the co tiles over the other cores (the framework's), and the
// input and weight tiles shared over the ring where a split allows it. Legality, double buffering, cost and choice are
// the framework's (planner.h).
Conv2dSpyrePlan plan_conv2d_spyre(const Conv2dShape &shape, const Conv2dSpyreOptions &options) {
    check_conv2d_shape(shape);
    const MachineDescription &machine = scheduling_machine();
    const int bytes = shape.dtype.bytes();
    const int lanes = stick_lanes(shape.dtype);
    const int cip = round_up(shape.ci, lanes);
    const int xo_extent = shape.out_width(), yo_extent = shape.out_height();
    const int taps = shape.kw * shape.kh;
    const int64_t budget = planning::scratchpad_budget(machine, planning::ScratchpadReserve::TilesCounted);
    const double type_factor = planning::pt_type_factor(shape.dtype, machine);
    const int pass = machine.pt_pass_rows;
    const int max_cores = usable_cores(options.max_cores);
    const int sfu_stages = 3 + (shape.activation == Activation::Relu ? 1 : 0);  // widen the bias, init, act, cast

    std::vector<int> tns, txs, tys;
    if (options.tile_co > 0) {
        tns.push_back(round_up(options.tile_co, lanes));
    } else {
        for (int tn = lanes; tn <= std::min(round_up(shape.co, lanes), 512); tn += lanes) tns.push_back(tn);
    }
    if (options.tile_x > 0) {
        txs.push_back(round_up(options.tile_x, pass));
    } else {
        txs = row_pieces(xo_extent, pass, 512);
    }
    if (options.tile_y > 0) {
        tys.push_back(options.tile_y);
    } else {
        for (int ty = 1; ty <= std::min(yo_extent, 32); ty++) tys.push_back(ty);
    }

    // Ties within 2%: the estimate leaves out what few tiles per core meet in the simulator (DRAM
    // contention between a core's loads and the other cores' stores, the last store's tail), and
    // among near-equal candidates the tie rule's more cores is the better bet (ResNet's 3x3 layer
    // of 64 channels at 56 x 56: 14 cores estimated 13.6 us, simulated 15.0; 28 cores 13.8 us and
    // 12.3).
    planning::PlanSearch<Conv2dSpyrePlan> search("conv2d", kConv2dTieTolerance);
    bool refused_for_pad = false;  // a candidate was left out only because pad needs one tile per core
    for (int tn : tns) {
        const int n_tiles = round_up(shape.co, tn) / tn;
        for (int tx : txs) {
            const int xp = round_up(xo_extent, tx);
            for (int cx = 1; cx <= std::min(max_cores, xp / tx); cx++) {
                if ((xp / tx) % cx != 0) continue;
                for (int ty : tys) {
                    const int64_t in_tile = (int64_t)cip * (tx + shape.kw - 1) * (ty + shape.kh - 1) * bytes;
                    const int64_t w_tile = (int64_t)tn * cip * taps * bytes + (int64_t)tn * bytes;  // and the bias
                    const int64_t out_tile = (int64_t)tn * tx * ty;
                    for (int cy = 1; cy * cx <= max_cores; cy++) {
                        const int yp = round_up(yo_extent, ty * cy);
                        if (cy > 1 && yp - yo_extent >= yp / cy) continue;  // a core of padding rows only
                        const std::vector<int> rest = planning::even_core_split({shape.batch, n_tiles}, max_cores / (cy * cx));
                        if (rest.empty()) continue;
                        const int cb = rest[0], cn = rest[1];
                        const int bs = shape.batch / cb, nt = n_tiles / cn, yt = yp / (ty * cy), xt = xp / (tx * cx);
                        if (shape.pad > 0 && (yt > 1 || xt > 1)) {  // an edge inside a core's tile loop
                            refused_for_pad = true;
                            continue;
                        }
                        for (int sharing = 0; sharing < 4; sharing++) {
                            // The cn cores of one row range share each input tile, the cb * cy cores of one
                            // co range each weight tile, over the ring (share_over_ring): DRAM reads each once.
                            const bool share_in = sharing & 1, share_w = sharing & 2;
                            // A zero-padded input tile is written partly by the SFU (its boundary), so it
                            // is not a plain DMA copy that share_over_ring can pass along the ring: each
                            // core loads its own. The cores at the image's edges then run other programs
                            // than the rest (their edge rows are fills), so the chains ring sharing needs
                            // for the weights are not there either: with pad > 0 nothing is shared.
                            if ((share_in && (!options.share_input || cn < 2 || shape.pad > 0)) ||
                                (share_w && (!options.share_weights || cb * cy * cx < 2 || shape.pad > 0)))
                                continue;
                            Conv2dSpyrePlan p;
                            p.tn = tn;
                            p.tx = tx;
                            p.ty = ty;
                            p.cip = cip;
                            p.cop = n_tiles * tn;
                            p.xp = xp;
                            p.yp = yp;
                            p.in_xp = xp + shape.kw - 1;
                            p.in_yp = yp + shape.kh - 1;
                            p.cb = cb;
                            p.cn = cn;
                            p.cy = cy;
                            p.cx = cx;
                            p.in_lanes = lanes;
                            p.input_shared = share_in;
                            p.weights_shared = share_w;
                            planning::TiledPlan t;
                            t.reserve = planning::ScratchpadReserve::TilesCounted;
                            // The input tile moves with the innermost tile loop that iterates, and the
                            // result tile is stored once per tile (both double-buffered together); the
                            // weights, the bias and the accumulator stay per co tile.
                            t.buffered_bytes = in_tile + out_tile * bytes;
                            t.fixed_bytes = w_tile + out_tile * 4 + (int64_t)tn * 4 + 4LL * tn * 4;
                            t.staging_trip = planning::staging_trip({xt, yt});
                            t.per_core_trips = {xt, yt, nt, bs};
                            t.inner_loops = ty > 1 ? 1 : 0;  // the rows of a tile around the PT taps
                            const int64_t tiles = (int64_t)bs * nt * yt * xt;  // per core
                            const int cores = p.cores();
                            const double w_read = (double)cores * bs * nt * w_tile / (share_w ? cb * cy * cx : 1);
                            // The weights load before a co tile's first tile computes (fixed_cycles below),
                            // not in the pipelined stream of input tiles and results.
                            t.read_bytes = (double)cores * tiles * in_tile / (share_in ? cn : 1);
                            t.write_bytes = (double)shape.batch * n_tiles * tn * xp * yp * bytes;
                            t.cores = cores;
                            t.tiles_per_core = (double)tiles;
                            // Per tile: a PT matmul per filter row and output row (m = the row's pixels,
                            // n = co, k = kw x ci: the taps folded; per tap, k = ci, with pad), and
                            // the SFU stages per row of the tile.
                            const int matmuls = shape.pad > 0 ? taps : shape.kh;
                            const int k = shape.pad > 0 ? cip : shape.kw * cip;
                            t.compute_cycles_per_tile =
                                (double)matmuls * ty * machine.pt_matmul_cycles(tx, tn, k, type_factor) +
                                (double)sfu_stages * ty *
                                    machine.sfu_instruction_cycles(tn, tx, 4, MachineDescription::SfuCost::Simple);
                            t.ring_bytes_per_core = (share_in ? (double)tiles * in_tile : 0.0) + (share_w ? (double)bs * nt * w_tile : 0.0);
                            // Tiles of whole rows, double-buffered, share kh - 1 input rows with the tile
                            // before them (target/program_tree/tile_overlap_reuse.h): all but the first of a core's
                            // row tiles per co tile copy those rows on the SFU instead of reading them.
                            if (xt == 1 && yt >= 2 && shape.kh > 1 && shape.pad == 0) {
                                const double overlap = (double)cip * (tx + shape.kw - 1) * (shape.kh - 1) * bytes;
                                const double reused_tiles = (double)bs * nt * (yt - 1);
                                t.overlap_read_bytes = (double)cores * reused_tiles * overlap / (share_in ? cn : 1);
                                t.overlap_copy_cycles_per_tile =
                                    (yt - 1.0) / yt *
                                    machine.sfu_instruction_cycles(overlap / 4, 1, 4, MachineDescription::SfuCost::Simple);
                            }
                            // Exposed, outside the tile pipeline: the weights of each co tile load
                            // before its first tile computes, and the last core of a chain holds its
                            // first tiles a chain fill after the head.
                            t.fixed_cycles = machine.dram_cycles(w_read, 0, cores);
                            t.chain_fill = (share_w ? planning::chain_fill_cycles(w_tile, cb * cy * cx, true, machine) : 0.0) +
                                           (share_in ? planning::chain_fill_cycles(in_tile, cn, true, machine) : 0.0);
                            // Few tiles per core: every core loads its first input tile at once, behind
                            // the weights, before any compute, and the last tile's compute and store
                            // follow the last load with no other core's traffic left to hide them.
                            t.pipeline_end_exposed = true;
                            const planning::Verdict v = planning::judge(t, options.double_buffer);
                            p.double_buffer = v.double_buffer;
                            p.footprint_bytes = v.footprint_bytes;
                            p.dram_bytes = (int64_t)(t.read_bytes - (v.double_buffer ? t.overlap_read_bytes : 0.0) + w_read +
                                                     t.write_bytes);
                            search.offer(p, v, [&] {
                                return "tiles " + std::to_string(p.tn) + " co x " + std::to_string(p.tx) + " px x " +
                                       std::to_string(p.ty) + " rows, cores " + std::to_string(p.cb) + " x " +
                                       std::to_string(p.cn) + " x " + std::to_string(p.cy) + " x " + std::to_string(p.cx) +
                                       " (batch x co x rows x pixels)" + (p.input_shared ? ", input shared" : "") +
                                       (p.weights_shared ? ", weights shared" : "");
                            });
                        }
                    }
                }
            }
        }
    }
    _halide_user_assert(search.found() || !refused_for_pad)
        << "conv2d Spyre schedule: with pad=" << shape.pad << " every core must compute its output rows and pixels "
        << "as one tile (the backend resolves the padded edges per core, not per iteration of a core's loop), so "
        << "tile_x times the cores along the pixels must cover the output width (" << xo_extent
        << ", tile_x at most 512 pixels) and tile_y times the cores along the rows the output height (" << yo_extent
        << ", tile_y at most 32)"
        << (options.tile_x > 0 || options.tile_y > 0 ? "; leave tile_x and tile_y at 0, or make them that large"
                                                     : "; pad the input on the host and use pad=0 for this shape");
    _halide_user_assert(search.found())
        << "conv2d Spyre schedule: no tile of " << (options.tile_co > 0 ? "tile_co=" + std::to_string(tns.front()) : "up to 512")
        << " output channels x " << (options.tile_x > 0 ? "tile_x=" + std::to_string(txs.front()) : "any") << " pixels x "
        << (options.tile_y > 0 ? "tile_y=" + std::to_string(tys.front()) : "any") << " rows fits in the scratchpad budget ("
        << budget << " bytes) with the whole weight tile (tile_co x ci=" << shape.ci << " x kw=" << shape.kw << " x kh="
        << shape.kh << ") and a per-core loop nest of at most " << machine.max_loop_depth
        << " levels; the weight tile of one stick of output channels alone is "
        << (int64_t)lanes * cip * taps * bytes << " bytes, and ci is not split into chunks yet";
    return planning::with_estimate(search);
}

void schedule_conv2d_host(Conv2dFuncs f, const Conv2dShape &shape, const Target &target) {
    const int vec = target.natural_vector_size(Float(32));
    const int vn = std::min(vec, shape.co);  // ShiftInwards needs extent >= factor
    f.out.parallel(f.y).vectorize(f.co, vn);
    f.bias_f.compute_root();
    // The accumulator's vectors stay inside co (RoundUp, an update's default, would read
    // weights beyond the last channel).
    f.acc.compute_at(f.out, f.y).vectorize(f.co, vn, TailStrategy::GuardWithIf);
    f.acc.update().reorder(f.co, f.r.x, f.r.y, f.r.z, f.x).vectorize(f.co, vn, TailStrategy::GuardWithIf);
}

void schedule_conv2d_spyre(Conv2dFuncs f, Func in_in, Func w_in, Func bias_in, const Conv2dShape &shape,
                           const Conv2dSpyrePlan &p) {
    Var co = f.co, x = f.x, y = f.y, b = f.b;
    Var no("no"), ni("ni"), xo("xo"), xi("xi"), yo("yo"), yi("yi");
    _halide_user_assert(p.cop % (p.cn * p.tn) == 0 && p.yp % (p.cy * p.ty) == 0 && p.xp % (p.cx * p.tx) == 0 &&
                        p.tn % p.in_lanes == 0 && shape.batch % p.cb == 0)
        << "conv2d Spyre schedule: tiles do not divide the padded extents (co " << p.cop << ", x " << p.xp << ", y "
        << p.yp << ")";

    // Cores over (batch, co tiles, row tiles, pixel strips); per core for bs, no, yo, xo { one
    // tn x tx x ty tile }. Core index: co ranges fastest, so the cores that share an input tile
    // are ring neighbours (its forwarding, per tile, is the ring's larger stream; the weights'
    // chains then interleave: ci = co = 256 at 56 x 56, batch 4, 257.7 us with rows fastest,
    // 255.4 us so).
    f.out.reorder(co, y, x, b);
    const CoreSplit cores = split_across_cores(
        f.out, {{b, shape.batch, 1, p.cb}, {co, p.cop, p.tn, p.cn}, {y, p.yp, p.ty, p.cy}, {x, p.xp, p.tx, p.cx}});
    const Var bs = cores.serial_of(b), cs = cores.serial_of(co), ys = cores.serial_of(y), xs = cores.serial_of(x);
    f.out.split(cs, no, ni, p.tn, TailStrategy::RoundUp)
        .split(xs, xo, xi, p.tx, TailStrategy::RoundUp)
        .split(ys, yo, yi, p.ty, TailStrategy::RoundUp)
        .reorder(ni, xi, yi, xo, yo, no, bs);
    stick_vectorize(f.out, ni);

    // Per co tile: the bias (widened to fp32; for fp32 bias_f is a plain copy, a DMA) and the weights.
    if (shape.dtype != Float(32)) stage_in_scratchpad(bias_in, f.out, no);
    stage_in_scratchpad(f.bias_f, f.out, no);
    stage_in_scratchpad(w_in, f.out, no);

    // fp32 accumulator tile, initialised with the bias; per output row of the tile and
    // tap (unrolled) one PT matmul: n = co, m = the row's pixels, k = ci.
    accumulate_in_scratchpad(f.acc, f.out, xo);
    matmul_on_pt(f.acc, f.r.x, co, x);
    f.acc.update().reorder(co, x, f.r.x, f.r.y, f.r.z, y, b).unroll(f.r.y).unroll(f.r.z);

    // The input rows of the tile, staged once for every tap, at the innermost tile loop that iterates.
    const bool x_tiled = p.x_tiles() > 1;
    stage_in_scratchpad(in_in, f.out, x_tiled ? xo : yo, p.double_buffer);

    // The cores of one row range (split along co) load the same input tiles, and the cores of
    // one co range (split along batch and rows) the same weights: once per chain, then along the ring.
    // In pieces: a core has few tiles, so the chains' fill is what forwarding costs (a 3x3,
    // 64 -> 64 channel layer on a 32 x 32 output: 9.8 us with whole tiles, 5.8 us in pieces).
    if (p.input_shared) share_over_ring(in_in, RingForwarding::Pieces);
    if (p.weights_shared) share_over_ring(w_in, RingForwarding::Pieces);

    // Activation and cast on the SFU at the tile (vectors of the whole tile width); out stores the tile.
    f.result.compute_at(f.out, xo).store_in(MemoryType::VTCM).vectorize(co, p.tn, TailStrategy::RoundUp);
    // With the input tile, the result tile: a tile's cast need not wait for the previous tile's
    // store (64 -> 64 channels at 56 x 56, batch 1: 9.895 -> 9.876 us).
    if (p.double_buffer) double_buffer_result(f.result);
}

}  // namespace spyre
