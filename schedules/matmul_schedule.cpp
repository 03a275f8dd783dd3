// Schedules of the matmul with a fused epilogue (see matmul_schedule.h).
#include "matmul_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "spyre/machine.h"
#include "planner.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

namespace {



// Scratchpad bytes per core: A (tm x tk), B (tk x tn), the fp32 accumulator,
// the epilogue stages (fp32) and the result tile, the bias (staged and fp32)
// and a few fp32 SFU temporaries of one tile row. With a residual also its
// staged tile and two more temporary rows (R widened, the sum). SFU row
// blocking (target/sfu_row_blocking.h) widens the temporaries to more rows
// only where the scratchpad has room.
// `bytes` is the element size of A and B, `out_bytes` that of C, the bias and R
// (int8 operands: 1 and 4; a stick holds 128 int8).
int64_t matmul_footprint(int tm, int tn, int tk, int bytes, int out_bytes, int stages, bool residual) {
    const int64_t tile = (int64_t)tm * tn;
    return (int64_t)tm * tk * bytes + (int64_t)tk * tn * bytes + tile * 4 * (1 + stages) + tile * out_bytes +
           (int64_t)tn * (out_bytes + 4) + 4LL * tn * 4 + (residual ? tile * out_bytes + 2LL * tn * 4 : 0);
}

// The second copies of double buffering: the A and B chunks (K chunked) or tiles.
int64_t second_copies(int tm, int tn, int tk, int bytes) {
    return (int64_t)tm * tk * bytes + (int64_t)tk * tn * bytes;
}

// One candidate of the planner's search: tiles, K chunk, core split, tiles per core.
struct MatmulCandidate {
    int tm, tn, tk, kp, cm, cn;
    int64_t mt, nt;  // M and N tiles per core
    bool double_buffer, a_shared, b_shared;
    bool result_double_buffer;  // the C tile in two copies: its store overlaps the next tile
};

struct MatmulCost {
    double cycles = 0;                     // estimated simulated cycles of the kernel
    double read_bytes = 0, write_bytes = 0;  // DRAM traffic of the whole kernel
    double per_core_cycles = 0, dram_cycles = 0;  // the two terms of the estimate (for SPYRE_MATMUL_PLAN_LOG)
};

// SFU cycles of one instruction over `bytes` (timing_model.cpp's formula).
double sfu_cycles(const MachineDescription &m, double bytes, double cost = 1.0) {
    return std::ceil(bytes / (m.sfu_bytes_per_cycle_per_corelet * m.corelets_per_core)) * cost + m.sfu_instruction_overhead_cycles;
}

// The simulated time of a candidate, built from the machine description the
// simulator runs on (docs/timing-model.md) and the program schedule_matmul_spyre
// emits for it. Per core the program is a sequence of steps, one per K chunk of
// each output tile: stage the step's A and B pieces (DMA), acc += A*B (PT); at a
// tile's first step also the bias (DMA, then acc = bias on the SFU), at its last
// the epilogue and cast (SFU) and the store of the C tile (DMA). With a
// residual each tile first loads its R tile (DMA, before the bias), which the
// epilogue adds (SFU); R's bytes join the kernel's DRAM reads.
// No simulation: a closed form per candidate, so planning stays cheap.
//  - DMA: a core's transfers run one at a time at its share of the card's DRAM
//    work rate while `active` cores move data at once (dram_cycles at that
//    concurrency); `active` is the cores times the fraction of the run the
//    card's DRAM work for all bytes takes, settled in a few rounds (the
//    simulator's DramModel shares the card among the cores with transfers in
//    flight). Ring forwarding of shared A pieces occupies the same unit, and a
//    core inside a chain forwards every piece.
//  - Each wait on a transfer pays the access latency (dma_latency_cycles).
//  - PT at the sustained rate (pt_macs_per_cycle) with the pass fill.
//  - What double buffering overlaps, read from the emitted DMA streams: with K
//    chunks, the next chunk's loads with this chunk's matmul, within a tile
//    (each tile's first chunk loads before its first matmul); with whole-K
//    tiles only the second tile's B, since every later B load is issued after
//    the previous store and before the next bias. Between tiles the bias and the
//    SFU work overlap nothing, nor does the store unless the backend spreads it
//    over the next tile's K chunks (store_spreading.h).
//  - A chain of cores sharing A (or B) runs at its head's pace: the head loads
//    every piece of the chain at its fair share of the card. A B chain's cores
//    are cn apart on the ring, so its forwards cross cn links each, which the
//    cn B chains share: its stagger (the fill of its last core) crosses
//    (cm - 1) x cn links (whole tiles: matmul does not forward in pieces), and
//    a step takes at least cn B pieces' link time. (Whole-K tiles are not offered B chains:
//    docs/planning.md.)
//  - Stores: every core stores a whole tile at about the same time, so such a
//    store costs the card's work for all of them, turnaround included (the
//    card charges it to the stores of a kernel that reads more than it writes).
//  - Fill: the first loads (and, for shared A, the chain head's first piece
//    plus cn - 1 ring hops) before the first matmul; drain: the last tile's
//    epilogue and store after the last matmul.
//  - The card's DRAM work for the kernel's total bytes (dram_cycles), plus the
//    last matmul and epilogue, during which no transfer is in flight, bounds the
//    whole run from below.
MatmulCost estimate_matmul(const MachineDescription &m, const MatmulShape &shape, const MatmulCandidate &c) {
    const double bytes = shape.dtype.bytes();                       // A and B
    const double out_bytes = matmul_output_type(shape).bytes();     // C, the bias and R
    const double cores = (double)c.cm * c.cn;
    const bool chunked = c.tk < c.kp;
    const double chunks = (double)(c.kp / c.tk), tiles = (double)(c.mt * c.nt);
    // The backend leaves a K loop of odd trip count single-buffered (double_buffering.h).
    const bool double_buffer = c.double_buffer && (!chunked || (c.kp / c.tk) % 2 == 0);
    // DRAM bytes of one core (the mean over the cores of a chain for a shared operand).
    const double a_piece = (double)c.tm * c.tk * bytes;            // A staged per step (chunked) or per row of tiles
    const double a_loads = chunked ? tiles * chunks : (double)c.mt;  // A pieces a core stages
    const double a_core = a_loads * a_piece / (c.a_shared ? c.cn : 1);
    const double b_piece = (double)c.tk * c.tn * bytes;             // B staged per step
    const double b_core = tiles * ((double)c.kp * c.tn * bytes / (c.b_shared ? c.cm : 1) + (double)c.tn * out_bytes);
    const double w_core = tiles * (double)c.tm * c.tn * out_bytes;
    const double r_tile = shape.residual ? (double)c.tm * c.tn * out_bytes : 0.0;  // the residual tile, loaded per tile
    MatmulCost cost;
    cost.read_bytes = (a_core + b_core + tiles * r_tile) * cores;
    cost.write_bytes = w_core * cores;
    // A core's DMA time for `r` read and `w` written bytes while `active` cores move as much at once.
    double active = cores;
    auto dma = [&](double r, double w) { return m.dram_cycles(r * active, w * active, active); };
    // The card charges the read/write turnaround to the transfer that raises the
    // smaller of its total bytes read and written (DramModel::start): when the
    // kernel reads more than it writes, to every byte stored. Within the run the
    // other cores' loads share that work; the last stores, which nothing
    // overlaps, pay it in full.
    const bool writes_minor = cost.write_bytes <= cost.read_bytes;
    const double turnaround_per_byte = m.dram_turnaround_ns_per_byte * m.clock_ghz;
    const double ring = c.a_shared ? a_piece / m.ring_bytes_per_cycle : 0.0;    // forwarding one A piece
    const double b_ring = c.b_shared ? b_piece / m.ring_bytes_per_cycle : 0.0;  // forwarding one B piece
    const double hop = m.ring_hop_latency_ns * m.clock_ghz;
    const double lat = m.dma_latency_cycles;

    // One step's transfers and compute (the mean step; A of a row of tiles spread over its tiles).
    // The A and B bytes one core stages per step for itself (a_own, b_own: a
    // shared operand's are the chain head's) and the mean over the cores.
    const double a_own = a_loads * a_piece / (tiles * chunks), b_own = b_piece;
    const double a_step = a_own / (c.a_shared ? c.cn : 1), b_step = b_own / (c.b_shared ? c.cm : 1);
    // A core inside a chain forwards every piece of it: the pace of the chain's steps.
    const double ring_step = (c.a_shared ? ring * a_loads / (tiles * chunks) : 0.0) + b_ring;
    // The chains' fill (matmul forwards whole tiles, share_over_ring's default): the
    // last core of an A chain holds its first piece a chain fill of cn cores after the
    // head; a B chain's cm cores are cn apart on the ring, so each of its cm - 1
    // forwards crosses cn links.
    const double a_chain_fill = c.a_shared ? planning::chain_fill_cycles(a_piece, c.cn, /*in_pieces=*/false, m) : 0.0;
    const double b_chain_fill = c.b_shared ? (c.cm - 1) * c.cn * (b_ring + hop) : 0.0;
    const double type_factor = shape.dtype == Float(32) ? m.pt_fp32_rate_factor
                               : shape.dtype == Int(8)  ? m.pt_int8_rate_factor
                                                        : 1.0;
    const double passes = std::ceil((double)c.tm / m.pt_pass_rows);
    const double pt_step = passes * ((double)m.pt_pass_rows * c.tn * c.tk / m.pt_macs_per_cycle(type_factor) + m.pt_pass_fill_cycles);
    // Per tile: bias widening and acc = bias, the epilogue stages and the cast (SFU);
    // bias and C store (DMA).
    const int stages = epilogue_stages(shape.activation);
    const double tile_f32 = (double)c.tm * c.tn * 4;
    const double act_cost = shape.activation == Activation::Gelu || shape.activation == Activation::Silu ? 4.0 * stages : 0.0;
    const double sfu_init = sfu_cycles(m, (double)c.tn * 4) + sfu_cycles(m, tile_f32);
    // The residual's add joins the tail (fp16: R's widening runs before the last matmul ends).
    const double sfu_tail = sfu_cycles(m, tile_f32) + act_cost * sfu_cycles(m, tile_f32, m.sfu_transcendental_cost) +
                            (shape.residual ? sfu_cycles(m, tile_f32) : 0.0);
    auto per_core_cycles = [&]() {
        const double bias_dma = dma((double)c.tn * out_bytes, 0);
        // The residual tile loads just before the bias, at each tile's start: at the
        // first tile on every core at once (ahead of the chain head's first A piece
        // too), later at the run's concurrency.
        const double r_fill = shape.residual ? m.dram_cycles(r_tile * cores, 0, cores) : 0.0;
        const double r_dma = shape.residual ? dma(r_tile, 0) : 0.0;
        // A chain's pace is its head's: the head loads every piece of the chain
        // as well as its own pieces of the other operand, busy the whole step,
        // while the other cores finish early. The card shares its work equally
        // among the cores with transfers in flight, so the busiest core (the
        // first, which heads an A chain and a B chain when both are shared) gets
        // 1/n of the card at the mean concurrency n of the step: each core for
        // its bytes' share of the busiest core's. The cores are the cm heads of
        // A chains (one per row range: the first core along N), the cn heads of
        // B chains (the first core along M), and the rest; a core heading
        // neither loads only what is not shared.
        double dma_step = dma(a_step + b_step, 0) + ring_step;
        if (c.a_shared || c.b_shared) {
            const double a_rest = c.a_shared ? 0.0 : a_own, b_rest = c.b_shared ? 0.0 : b_own;
            const double head = a_own + b_own;
            const double a_heads = c.cm - 1, b_heads = c.cn - 1, rest = (double)(c.cm - 1) * (c.cn - 1);
            const double n = std::clamp(1 + (a_heads * (a_own + b_rest) + b_heads * (a_rest + b_own) + rest * (a_rest + b_rest)) / head,
                                        1.0, cores);
            dma_step = std::max(dma_step, head / m.dram_bytes_per_cycle() * n / m.dram_concurrency_efficiency(n) + ring_step);
        }
        // The cores of a B chain are cn apart in ring order (N is the inner core
        // dimension): every forward crosses cn links, and the cn chains' pieces
        // share each link, so a step takes at least cn pieces' link time.
        if (c.b_shared) dma_step = std::max(dma_step, ring_step + (c.cn - 1) * b_ring);
        const double steps = tiles * chunks;
        // Fill: the first step's loads (and the bias) land before the first matmul;
        // with a shared operand the last core of a chain holds the first piece a chain fill later.
        // (The chain head loads that piece alone at the one-core rate while the others load B.)
        const double chain = std::max(c.a_shared ? m.dram_cycles(a_piece, 0, 1) + a_chain_fill : 0.0,
                                      c.b_shared ? m.dram_cycles(b_piece, 0, 1) + b_chain_fill : 0.0);
        // Double buffered whole-K tiles: the next tile's B load is issued before this
        // tile's bias, so the first matmul waits for two steps' loads.
        const double first_loads = (double_buffer && !chunked && steps >= 2 ? 2 : 1) * dma_step;
        const double fill = std::max(first_loads + bias_dma + r_fill, chain + r_fill) + lat + sfu_init;
        // Every core stores a tile at about the same time (the cores of a chain
        // start up to its ring latency apart), so a whole-tile store shares the
        // card with the other cores' stores: the card's work for all of them,
        // less the chain's stagger, and at least one core's store alone.
        const double store_bytes = (double)c.tm * c.tn * out_bytes;
        const double store_byte_cycles = 1.0 / m.dram_bytes_per_cycle() + (writes_minor ? turnaround_per_byte : 0.0);
        const double stagger = std::max(a_chain_fill, b_chain_fill);
        const double whole_store = std::max(store_bytes * store_byte_cycles / m.dram_concurrency_efficiency(1),
                                            store_bytes * cores * store_byte_cycles / m.dram_concurrency_efficiency(cores) - stagger);
        // Drain: the last tile's epilogue and store follow its last matmul.
        const double drain = sfu_tail + whole_store + lat;
        // Between tiles a whole store blocks its core's DMA queue, ring forwarding
        // included, so a chain refills for the next tile as for the first: the
        // last core's next matmul waits for its store and the chain's stagger.
        const double whole_store_between = std::max(whole_store, store_bytes * store_byte_cycles / m.dram_concurrency_efficiency(1) + stagger);
        // In each core's DMA stream a tile's bias load follows the previous tile's
        // store, which follows that tile's last matmul and cast: between tiles the
        // store, the bias and the SFU work overlap nothing. Except where the
        // backend spreads the store (store_spreading.h) over the next tile's K
        // chunks, whose loads it then joins: the tiles of the innermost tile loop
        // (N tiles, or M tiles when a core has one N tile), K chunked and double
        // buffered, and the result not double buffered (which unrolls that loop
        // in pairs, leaving each store whole).
        // The pieces: whole rows (or sticks of a one-row tile), as many as divide
        // them up to the pipelined loop's iterations plus one.
        const int64_t units = c.tm > 1 ? c.tm : (int64_t)c.tn * (int64_t)out_bytes / m.stick_bytes;
        const int64_t pipelined_trip = c.kp / c.tk / 2 - 1;
        int64_t store_pieces = 0;
        for (int64_t p = std::min<int64_t>(pipelined_trip + 1, units); p >= 2 && store_pieces == 0; p--) {
            if (units % p == 0) store_pieces = p;
        }
        const bool spreads = chunked && double_buffer && !c.result_double_buffer && pipelined_trip >= 2 && store_pieces > 0;
        const double spread_stores = spreads ? (c.nt >= 2 ? (double)(c.nt - 1) * c.mt : (double)(c.mt - 1)) : 0.0;
        const double whole_stores = tiles - 1 - spread_stores;
        const double between_tiles = whole_stores * whole_store_between + (tiles - 1) * (bias_dma + r_dma + 2 * lat + sfu_init + sfu_tail);
        double body;
        if (chunked) {
            // The K chunks are double buffered within a tile: each tile's first chunk
            // loads before its first matmul, the next ones while the previous matmul runs.
            const double tile = double_buffer ? dma_step + lat + (chunks - 1) * std::max(dma_step, pt_step) + pt_step
                                                : chunks * (dma_step + lat + pt_step);
            // A spread store's pieces join the next tile's chunk loads, one piece per
            // iteration (two chunks) of the pipelined K loop. The cores store their
            // pieces at about the same time unless the chain's stagger spreads them
            // over more than an iteration.
            const double iteration = 2 * std::max(dma_step, pt_step);
            const double n_p = std::clamp(cores * 2 * pt_step / std::max(stagger, 2 * pt_step), 1.0, cores);
            const double piece_dma = store_pieces > 0 ? store_bytes / store_pieces * store_byte_cycles * n_p / m.dram_concurrency_efficiency(n_p) : 0.0;
            const double piece_extra = std::max(0.0, std::max(2 * dma_step + piece_dma, 2 * pt_step) - iteration);
            const double spread_tile = tile + store_pieces * piece_extra;
            body = between_tiles + (tiles - spread_stores) * tile + spread_stores * spread_tile - (dma_step + lat);  // the first chunk's load is the fill
        } else {
            // Whole-K tiles: the B of tile t + 2 is issued after the store of tile t
            // and before the bias of tile t + 1, so past the fill each tile's B load
            // sits between two matmuls even when double buffered.
            const double loads_rest = std::max(0.0, steps * dma_step - first_loads), pt_all = steps * pt_step;
            body = between_tiles + loads_rest + pt_all + (double_buffer ? 0.0 : (steps - 1) * lat);
        }
        return fill + body + drain;
    };
    // The cores move data at once only as much as the DRAM is busy: with the
    // card's DRAM work for all bytes taking a fraction f of the run, about
    // f x cores cores have transfers in flight, each at its share of
    // dram_cycles at that concurrency. Starting from all cores (the slowest
    // transfers), a few rounds settle the run time and that concurrency.
    const double dram_all = m.dram_cycles(cost.read_bytes, cost.write_bytes, cores);
    double per_core = per_core_cycles();
    for (int round = 0; round < 3; round++) {
        active = std::clamp(cores * dram_all / std::max(per_core, dram_all), 1.0, cores);
        per_core = per_core_cycles();
    }
    // No transfer is in flight while the first loads' latency passes, nor after
    // the last loads landed while the last matmul and the epilogue run (the last
    // stores follow them): the card's DRAM work cannot fill those.
    const double dram_idle = pt_step + sfu_tail + 2 * lat;
    cost.per_core_cycles = per_core;
    cost.dram_cycles = dram_all + dram_idle;
    cost.cycles = std::max(per_core, dram_all + dram_idle);
    return cost;
}

}  // namespace

Type matmul_output_type(const MatmulShape &shape) {
    return shape.dtype == Int(8) ? Int(32) : shape.dtype;
}

int epilogue_stages(Activation a) {
    return a == Activation::Gelu || a == Activation::Silu ? 1 : 0;
}

int shared_weight_padded_n(const MatmulShape &shape) {
    const int64_t block = (int64_t)stick_lanes(shape.dtype) * scheduling_machine().cores;
    return (int)std::min<int64_t>(((int64_t)shape.n + block - 1) / block * block, INT32_MAX);
}

MatmulSpyrePlan plan_matmul_spyre(const MatmulShape &shape, const MatmulSpyreOptions &options) {
    const MachineDescription &machine = scheduling_machine();
    const int bytes = shape.dtype.bytes(), out_bytes = matmul_output_type(shape).bytes();
    const int stages = epilogue_stages(shape.activation);
    const int lanes = stick_lanes(shape.dtype);
    const int kp = round_up(shape.k, lanes);
    const int64_t budget = planning::scratchpad_budget(machine, planning::ScratchpadReserve::TilesCounted);
    // Tile columns in steps of 64, or of whole B sticks when a stick holds more (128 int8).
    const int tn_step = std::max(64, lanes);
    const int mp8 = round_up(shape.m, machine.pt_pass_rows), np64 = round_up(shape.n, tn_step);
    const int max_cores = usable_cores(options.max_cores);
    // Under a shared weight layout only plans whose padded N fits in it.
    const int weight_np = shape.shared_weight_layout ? shared_weight_padded_n(shape) : 0;

    // Candidate tiles: multiples of 64 columns up to 1024 and of 8 rows up to 1024,
    // or only the forced tile (rows in whole PT passes, columns in whole sticks).
    std::vector<int> tns, tms;
    if (options.tile_n > 0) {
        tns.push_back(round_up(options.tile_n, lanes));
    } else {
        for (int tn = tn_step; tn <= std::max(tn_step, std::min(np64, 1024)); tn += tn_step) tns.push_back(tn);
    }
    if (options.tile_m > 0) {
        tms.push_back(round_up(options.tile_m, machine.pt_pass_rows));
    } else {
        for (int tm = machine.pt_pass_rows; tm <= std::min(mp8, 1024); tm += machine.pt_pass_rows) tms.push_back(tm);
    }

    // SPYRE_MATMUL_PLAN_LOG=1 lists every candidate and its estimate on stderr.
    const char *log_env = std::getenv("SPYRE_MATMUL_PLAN_LOG");
    const bool plan_log = log_env && *log_env && *log_env != '0';
    planning::PlanSearch<MatmulSpyrePlan> search(1e-3);  // estimate_matmul resolves 0.1%
    for (int tn : tns) {
        for (int tm : tms) {
            // The largest K chunk (whole sticks, dividing the padded K) that fits, with
            // the second copies when double buffering (else without them). The backend
            // double buffers only a K loop of even trip count, so when that chunk leaves
            // an odd count the largest double-buffered one of an even count is a
            // candidate too.
            int tk = 0;
            bool db = false;
            for (int copies = options.double_buffer ? 2 : 1; copies >= 1 && tk == 0; copies--) {
                for (int c = kp; c >= lanes; c -= lanes) {
                    const int64_t extra = copies == 2 ? second_copies(tm, tn, c, bytes) : 0;
                    if (kp % c == 0 && matmul_footprint(tm, tn, c, bytes, out_bytes, stages, shape.residual) + extra <= budget) {
                        tk = c;
                        db = copies == 2;
                        break;
                    }
                }
            }
            if (tk == 0) continue;
            // Smaller double-buffered chunks of an even count are candidates too: a
            // shorter chunk shortens the ring chain's fill and the pipeline's ends
            // at the cost of more PT pass fills.
            std::vector<int> chunk_choices = {tk};
            if (db) {
                for (int c = tk - lanes; c >= lanes && kp / c <= 64; c -= lanes) {
                    if (kp % c == 0 && (kp / c) % 2 == 0) chunk_choices.push_back(c);
                }
            }
            for (int tk : chunk_choices) {
            const int mp = round_up(shape.m, tm), m_tiles = mp / tm;
            const int min_n_tiles = (shape.n + tn - 1) / tn;
            // N is padded to whole tiles, and further to a multiple of cn tiles (at most one
            // more tile per core): a tile count with no good divisor (N = 49155, a vocabulary,
            // is 769 sticks, a prime) would otherwise leave most cores idle.
            for (int cn = 1; cn <= std::min(max_cores, min_n_tiles); cn++) {
                const int n_tiles = round_up(min_n_tiles, cn), np = n_tiles * tn;
                if (weight_np && np > weight_np) continue;
                for (int cm : divisors(m_tiles)) {
                  for (int sharing = 0; sharing < 4; sharing++) {
                    // Which operands the cores of a chain pass along the ring: A along N, B along M.
                    const bool share = sharing & 1, share_b = sharing & 2;
                    // B chains only with K chunks: the estimate follows them in the chunked
                    // pipeline, not with whole-K tiles (docs/planning.md, "What is left").
                    if (cn * cm > max_cores || (share && (!options.share_a || cn < 2)) ||
                        (share_b && (!options.share_b || cm < 2 || tk == kp)))
                        continue;
                    const int64_t mt = m_tiles / cm, nt = n_tiles / cn;  // tiles per core
                    const int64_t footprint = matmul_footprint(tm, tn, tk, bytes, out_bytes, stages, shape.residual) + (db ? second_copies(tm, tn, tk, bytes) : 0);
                    // The result tile too when it fits and a core has an even number >= 2 of N tiles.
                    const int64_t result_copy = (int64_t)tm * tn * out_bytes;
                    const bool result_db = db && nt % 2 == 0 && footprint + result_copy <= budget;
                    const MatmulCost cost =
                        estimate_matmul(machine, shape, MatmulCandidate{tm, tn, tk, kp, cm, cn, mt, nt, db, share, share_b, result_db});
                    const double read = cost.read_bytes, write = cost.write_bytes;
                    const double us = cost.cycles / machine.clock_ghz / 1000.0;
                    if (plan_log)
                        std::fprintf(stderr, "matmul plan candidate: tm=%d tn=%d tk=%d cm=%d cn=%d db=%d share=%d share_b=%d read=%.0f write=%.0f est_us=%.2f per_core_us=%.2f dram_us=%.2f\n",
                                     tm, tn, tk, cm, cn, (int)db, (int)share, (int)share_b, read, write, us,
                                     cost.per_core_cycles / machine.clock_ghz / 1000.0, cost.dram_cycles / machine.clock_ghz / 1000.0);
                    MatmulSpyrePlan p;
                    p.tm = tm;
                    p.tn = tn;
                    p.tk = tk;
                    p.mp = mp;
                    p.np = np;
                    p.bp = weight_np ? weight_np : np;
                    p.kp = kp;
                    p.cm = cm;
                    p.cn = cn;
                    p.in_lanes = lanes;
                    p.footprint_bytes = footprint + (result_db ? result_copy : 0);
                    p.double_buffer = db;
                    p.double_buffer_result = result_db;
                    p.dram_bytes = (int64_t)(read + write);
                    p.a_shared = share;
                    p.b_shared = share_b;
                    // The footprint and the loops are legal by construction (a chunk that
                    // fits the budget; at most K chunks, N tiles and M tiles per core); the
                    // cost is estimate_matmul, the chain pipeline the shared estimate does
                    // not model (checked against the simulator by *MatmulPlannerRanking*).
                    planning::Verdict v;
                    v.legal = true;
                    v.double_buffer = db && (tk == kp || (kp / tk) % 2 == 0);  // as the backend buffers
                    v.footprint_bytes = p.footprint_bytes;
                    v.cores = cm * cn;
                    v.cycles = cost.cycles;
                    search.offer(p, v);
                  }
                }
            }
            }
        }
    }
    if (weight_np && options.tile_n > 0) {
        _halide_user_assert(round_up(shape.n, tns.front()) <= weight_np)
            << "matmul Spyre schedule: tile_n=" << options.tile_n << " pads N (" << shape.n << ") to "
            << round_up(shape.n, tns.front()) << " columns, past the shared weight layout's " << weight_np
            << " (shared_weight_layout=true): use a tile_n that divides " << weight_np << ", or tile_n=0";
    }
    if (options.tile_m > 0 || options.tile_n > 0) {
        _halide_user_assert(search.found())
            << "matmul Spyre schedule: no K chunk of a " << tms.front() << "x" << tns.front()
            << " tile (tile_m=" << options.tile_m << ", tile_n=" << options.tile_n << "; rows x columns) fits in the scratchpad ("
            << budget << " bytes)";
    }
    _halide_user_assert(search.found())
        << "matmul Spyre schedule: even a one-stick K chunk of an 8x64 tile does not fit in the scratchpad (" << budget
        << " bytes)";
    return planning::with_estimate(search, machine);
}

void schedule_matmul_host(MatmulFuncs f, const MatmulShape &shape, const Target &target) {
    Var n = f.n, m = f.m;
    Var no("no"), mo("mo"), ni("ni"), mi("mi"), nn("nn"), nv("nv");
    const int vec = target.natural_vector_size(Float(32));
    // Tiles no larger than the tensor (ShiftInwards needs extent >= factor).
    const int vn = std::min(vec, shape.n);
    const int tn = shape.n >= 2 * vn ? 2 * vn : vn;
    const int tm = std::min(4, shape.m);
    f.C.tile(n, m, no, mo, ni, mi, tn, tm).parallel(mo).vectorize(ni, vn);
    f.bias_f.compute_root();
    f.acc.compute_at(f.C, no).split(n, nn, nv, vn).vectorize(nv).unroll(nn).unroll(m);
    f.acc.update().reorder(n, m, f.k).split(n, nn, nv, vn).vectorize(nv).unroll(nn).unroll(m);
    for (Func g : f.epilogue) {
        g.compute_at(f.C, no).vectorize(n, vn);
        for (int u = 0; u < g.num_update_definitions(); u++) g.update(u).vectorize(n, vn);
    }
}

void schedule_matmul_spyre(MatmulFuncs f, Func A_in, Func B_in, Func bias_in, const MatmulShape &shape,
                           const MatmulSpyrePlan &p, Func R_in) {
    _halide_user_assert(shape.residual == R_in.defined())
        << "matmul Spyre schedule: " << (shape.residual ? "the shape has a residual but no R_in was given"
                                                        : "an R_in was given but the shape has no residual");
    Var n = f.n, m = f.m;
    Var mo("mo"), no("no"), mi("mi"), ni("ni");
    _halide_user_assert(p.mp % (p.cm * p.tm) == 0 && p.np % (p.cn * p.tn) == 0 && p.kp % p.tk == 0 &&
                        p.tn % p.in_lanes == 0)
        << "matmul Spyre schedule: tiles do not divide the padded extents (Mp " << p.mp << ", Np " << p.np << ", Kp "
        << p.kp << ")";

    // Core split (N, M) fused into one constant-extent parallel loop; per core
    // for mo, no { one tm x tn tile } as plain serial loops.
    const CoreSplit cores = split_across_cores(f.C, {{n, p.np, p.tn, p.cn}, {m, p.mp, p.tm, p.cm}});
    const Var mr = cores.serial_of(m), nr = cores.serial_of(n);
    f.C.tile(nr, mr, no, mo, ni, mi, p.tn, p.tm, TailStrategy::RoundUp).reorder(ni, mi, no, mo);
    stick_vectorize(f.C, ni);

    // The bias tile, widened to fp32 (for fp32 and int32 bias_f is a plain copy: a DMA).
    if (matmul_output_type(shape) != Float(32) && matmul_output_type(shape) != Int(32)) stage_in_scratchpad(bias_in, f.C, no);
    stage_in_scratchpad(f.bias_f, f.C, no);

    // fp32 accumulator tile, initialised with the bias, reduced on the PT.
    accumulate_in_scratchpad(f.acc, f.C, no);
    const PtMatmul pt = matmul_on_pt(f.acc, f.k, n, m, p.k_chunked() ? p.tk : 0);
    // Double buffered: the next chunk's (tile's) DMA overlaps this one's matmul.
    // (A loop of odd trip count is left single-buffered by the backend.)
    auto stage = [&](Func in, Func consumer, const VarOrRVar &at) { stage_in_scratchpad(in, consumer, at, p.double_buffer); };
    if (pt.k_chunked) {
        stage(A_in, f.acc, pt.k_outer);
        stage(B_in, f.acc, pt.k_outer);
    } else {
        stage(A_in, f.C, mo);  // reused by every N tile of the row of tiles
        stage(B_in, f.C, no);
    }
    // The cores of one row range load the same A tiles: once per chain, then along the ring.
    if (p.a_shared) share_over_ring(A_in);
    if (p.b_shared) share_over_ring(B_in);
    // The residual tile, staged per tile of C (DMA) and added by the SFU in the epilogue.
    if (shape.residual) stage_in_scratchpad(R_in, f.C, no);

    // Epilogue on the SFU at the tile: one instruction per stage and tile row
    // (vectors of the whole tile width), then the cast; C stores the tile (DMA).
    for (Func g : f.epilogue) {
        g.compute_at(f.C, no).store_in(MemoryType::VTCM).vectorize(n, p.tn, TailStrategy::RoundUp);
        for (int u = 0; u < g.num_update_definitions(); u++) g.update(u).vectorize(n, p.tn, TailStrategy::RoundUp);
    }
    f.result.compute_at(f.C, no).store_in(MemoryType::VTCM).vectorize(n, p.tn, TailStrategy::RoundUp);
    if (p.double_buffer_result) double_buffer_result(f.result);  // the store overlaps the next tile
}

}  // namespace spyre
