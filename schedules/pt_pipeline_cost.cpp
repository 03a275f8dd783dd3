// The PT pipeline model of the planning framework (see pt_pipeline_cost.h).
#include "pt_pipeline_cost.h"

#include <algorithm>
#include <cmath>

#include "planner.h"
#include "program_tree/tail_splitting.h"

namespace spyre {
namespace planning {

PtPipelineCost estimate_pt_pipeline(const PtPipeline &p, const MachineDescription &m) {
    const double bytes = p.in_bytes;                                 // A and B
    const double out_bytes = p.out_bytes;                           // C, the bias and R
    const double cores = (double)p.cm * p.cn;
    const bool chunked = p.tk < p.kp;
    const double chunks = (double)(p.kp / p.tk), tiles = (double)(p.mt * p.nt);
    // The backend leaves a K loop of odd trip count single-buffered (double_buffering.h).
    const bool double_buffer = p.double_buffer && (!chunked || (p.kp / p.tk) % 2 == 0);
    // DRAM bytes of one core (the mean over the cores of a chain for a shared operand).
    // A staged per step (chunked), per tile or per row of tiles, or its resident whole-K panel.
    const bool a_resident = chunked && p.a_resident;
    const double a_piece = (double)p.tm * (a_resident ? p.kp : p.tk) * bytes;
    const double bias_row = p.bias ? (double)p.tn * out_bytes : 0.0;  // the bias staged per tile
    const double a_loads = a_resident ? (double)p.mt : chunked || !p.a_per_row_of_tiles ? tiles * chunks : (double)p.mt;  // A pieces a core stages
    const double a_core = a_loads * a_piece / (p.a_shared ? p.cn : 1);
    // A resident B slice (K chunked, B shared): the core's whole-K B for all its N tiles, its
    // chain's shares loaded and gathered once before the first step; the steps then stage A alone.
    const bool b_resident = chunked && p.b_shared && p.b_resident;
    const bool b_shared = p.b_shared && !b_resident;                 // B shared per step along a chain
    const double b_piece = b_resident ? 0.0 : (double)p.tk * p.tn * bytes;  // B staged per step
    const double b_panel = (double)p.kp * p.tn * p.nt * bytes;       // a core's resident B slice
    const double b_core = b_resident ? b_panel / p.cm + tiles * bias_row
                                     : tiles * ((double)p.kp * p.tn * bytes / (p.b_shared ? p.cm : 1) + bias_row);
    const double out_tile_bytes = (double)p.tm * p.tn * p.out_fraction * out_bytes;  // C's tile
    const double w_core = tiles * out_tile_bytes;
    const double r_tile = p.residual ? out_tile_bytes : 0.0;  // the residual tile, loaded per tile
    PtPipelineCost cost;
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
    const double ring = p.a_shared ? a_piece / m.ring_bytes_per_cycle : 0.0;    // forwarding one A piece
    const double b_ring = b_shared ? b_piece / m.ring_bytes_per_cycle : 0.0;  // forwarding one B piece
    const double hop = m.ring_hop_latency_ns * m.clock_ghz;
    const double lat = m.dma_latency_cycles;

    // One step's transfers and compute (the mean step; A of a row of tiles spread over its tiles).
    // The A and B bytes one core stages per step for itself (a_own, b_own: a
    // shared operand's are the chain head's) and the mean over the cores.
    // (A resident panel: none; its loads are the fill, panel_fill below.)
    const double a_own = a_resident ? 0.0 : a_loads * a_piece / (tiles * chunks), b_own = b_piece;
    const double a_step = a_own / (p.a_shared ? p.cn : 1), b_step = b_own / (b_shared ? p.cm : 1);
    // A core inside a chain forwards every piece of it: the pace of the chain's steps.
    const double pt_step = m.pt_matmul_cycles(p.tm, p.tn, p.tk, p.pt_type_factor);
    // The last tile's matmul, epilogue and store run in row pieces (tail_splitting.h), where the
    // backend can move the C tile off the matmul's operands if the allocator placed it there.
    const double tail_pieces = (double)p.scratchpad_free_bytes < out_tile_bytes
                                   ? 1.0
                                   : compiler::trailing_tile_pieces(p.tm, (int64_t)out_tile_bytes, m);
    // A gathered B: each core forwards cm - 1 shares of 1/cm of a piece, each cn links away,
    // one round after another; the links the cn chains share bound the step (link_step below).
    // A core's own share lands (the access latency) before it forwards it. In a
    // double-buffered K loop that share is loaded a step ahead, so its latency passes during
    // the previous step and only the chain's fill (b_gather) pays it: at m=512 n=k=2048
    // (tm=128 tn=256 tk=64, 4-core B chains) a step takes 2.54 us gathered and 2.75 whole,
    // where charging the latency in every step estimated the gathered one at 2.83.
    // (Where the card's DRAM paced the steps, every round was once charged the cn chains'
    // shares as well, as if the cores finished their loads together and their rounds met on
    // the links: fitted on m=512 n=k=2048 when its gathered plans simulated 125-128 us. They
    // now simulate 103.8-106.6 us, and that term estimated the 256-deep chunks at 143.1 us and
    // made the planner keep the 64-deep ones; docs/planning.md.)
    const bool b_gathered = b_shared && p.b_gathered;
    const double dram_pace = cores * (a_step + b_step) / m.dram_bytes_per_cycle() / pt_step;
    const double b_gather = b_gathered ? lat + (p.cm - 1) * (b_ring / p.cm + p.cn * hop) : 0.0;
    const double ring_step = (p.a_shared && !a_resident ? ring * a_loads / (tiles * chunks) : 0.0) +
                             (b_gathered ? b_gather - (double_buffer ? lat : 0.0) : b_ring);
    // The chains' fill (matmul forwards whole tiles, share_over_ring's default): the
    // last core of an A chain holds its first piece a chain fill of cn cores after the
    // head; a B chain's cm cores are cn apart on the ring, so each of its cm - 1
    // forwards crosses cn links. (A resident panel's chain is its fill: panel_fill below.)
    const double a_chain_fill = p.a_shared && !a_resident ? planning::chain_fill_cycles(a_piece, p.cn, /*in_pieces=*/false, m) : 0.0;
    const double b_chain_fill = b_gathered ? b_gather : b_shared ? (p.cm - 1) * p.cn * (b_ring + hop) : 0.0;
    // Per tile: bias widening and acc = bias, the epilogue stages and the cast (SFU);
    // bias and C store (DMA).
    const double tile_f32 = (double)p.tm * p.tn * 4;
    // One SFU instruction over `bytes` of the tile (the timing model's formula, machine.h).
    auto sfu = [&](double bytes, MachineDescription::SfuCost cost = MachineDescription::SfuCost::Simple) {
        return m.sfu_instruction_cycles(bytes, 1, 1, cost);
    };
    const double sfu_init = (p.bias ? sfu((double)p.tn * 4) : 0.0) + sfu(tile_f32);
    // The residual's add joins the tail (fp16: R's widening runs before the last matmul ends).
    const double sfu_tail = sfu(tile_f32 * p.out_fraction) + p.epilogue_transcendental_passes * sfu(tile_f32, MachineDescription::SfuCost::Transcendental) +
                            p.epilogue_simple_passes * sfu(tile_f32) +
                            (p.residual ? sfu(tile_f32 * p.out_fraction) : 0.0);
    // A resident panel: every core loads its panel at once, or, shared over its chain of cn
    // cores (always gathered: schedule_matmul_spyre), 1/cn of it, then forwards the other
    // cn - 1 shares round the chain, each a share's put and a link's hop behind the previous one.
    const double panel_gather = a_resident && p.a_shared ? (p.cn - 1) * (a_piece / p.cn / m.ring_bytes_per_cycle + hop) : 0.0;
    const double panel_fill = a_resident ? m.dram_cycles(a_piece * p.cm * (p.a_shared ? 1 : p.cn), 0, cores) + panel_gather + lat : 0.0;
    // A resident B slice: every core loads 1/cm of its chain's slice at once, then forwards the
    // other cm - 1 shares round the chain; its cores are cn apart, so a share crosses cn links,
    // each carrying the cn chains' shares of a round.
    const double b_panel_fill = b_resident ? m.dram_cycles(b_panel / p.cm * cores, 0, cores) + lat +
                                                 (p.cm - 1) * p.cn * (b_panel / p.cm / m.ring_bytes_per_cycle + hop)
                                           : 0.0;
    double first_store = 0.0;  // when the first cores start storing (set by per_core_cycles)
    auto per_core_cycles = [&]() {
        const double bias_dma = p.bias ? dma(bias_row, 0) : 0.0;
        // The residual tile loads just before the bias, at each tile's start: at the
        // first tile on every core at once (ahead of the chain head's first A piece
        // too), later at the run's concurrency. With K chunks the backend moves it
        // past the K loop's loads (load_sinking.h): the last tile's then loads on
        // every core at once after them, during the last matmuls, which hide only
        // a little of it in the simulator (m=512 n=4096 k=4096: 27 us less fill,
        // 22 us more drain), so the drain is charged all of it.
        const double r_all = p.residual ? m.dram_cycles(r_tile * cores, 0, cores) : 0.0;
        const double r_fill = chunked ? 0.0 : r_all;
        const double r_dma = p.residual ? dma(r_tile, 0) : 0.0;
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
        // In a tile whose K loop carries the previous tile's store in pieces (store
        // spreading, below), every other core's piece shares the card with the head's
        // loads too: `others_stored` bytes each a step, a stored byte weighing its
        // turnaround as well (seen at m=n=k=2048, tm=64 tn=1024 with 16-core B chains:
        // the head's 256 KB B load took 1.0 us a step in the first tile and 8.5 us in the
        // second, a step 7.9 us of PT).
        // `own_stored`: bytes the head stores in the step as well (a store weighing its turnaround).
        auto head_step = [&](double others_stored, double own_stored = 0.0) {
            double step = dma(a_step + b_step + own_stored, 0) + ring_step;
            if (p.a_shared || (b_shared && !b_gathered)) {
                // A gathered B has no head: every core loads its share, as if not shared.
                const double b_mine = b_gathered ? b_step : b_own;
                const double a_rest = p.a_shared ? 0.0 : a_own, b_rest = b_shared && !b_gathered ? 0.0 : b_mine;
                const double head = a_own + b_mine + own_stored;
                const double a_heads = p.cm - 1, b_heads = p.cn - 1, rest = (double)(p.cm - 1) * (p.cn - 1);
                const double others = a_heads * (a_own + b_rest) + b_heads * (a_rest + b_mine) + rest * (a_rest + b_rest) +
                                      (cores - 1) * others_stored;
                const double n = std::clamp(1 + others / head, 1.0, cores);
                step = std::max(step, head / m.dram_bytes_per_cycle() * n / m.dram_concurrency_efficiency(n) + ring_step);
            }
            return step;
        };
        double dma_step = head_step(0.0);
        // The cores of a B chain are cn apart in ring order (N is the inner core
        // dimension): every forward crosses cn links, and the cn chains' pieces
        // share each link, so a step takes at least cn pieces' link time.
        const double link_step = b_shared && !b_gathered ? ring_step + (p.cn - 1) * b_ring
                                 // Gathered, every link carries the cn chains' cm - 1 shares of a piece a step.
                                 : b_gathered ? (p.cm - 1) * p.cn * b_ring / p.cm
                                              : 0.0;
        dma_step = std::max(dma_step, link_step);
        const double steps = tiles * chunks;
        // Fill: the first step's loads (and the bias) land before the first matmul;
        // with a shared operand the last core of a chain holds the first piece a chain fill later.
        // Each core's DMA queue takes its A piece (loaded, or received and forwarded) before
        // its B piece, and every core issues its first loads at once: the first A pieces land
        // after the card's work for all of them (the cm heads' with A shared, every core's
        // own without), the last core of an A chain a chain fill later; a B chain's head
        // (gathered: each core) then loads its B piece, which reaches the chain's last core
        // a B chain fill after that. Seen in the simulator at m=2048 n=512 k=4096: with 8
        // A chains of 4 cores and 4 B chains of 8 (tm=256 tk=512) the heads' A pieces land
        // at 16 us and the last core's first matmul starts at 37.9 us; at m=4096 n=512
        // k=2048 with one B chain of 32 cores (tm=128 tk=256) every core's A lands at 13.8
        // us, the head's B at 15.9 and the last core's first matmul starts at 58.5 us.
        const double a_ready = a_resident ? 0.0
                               : p.a_shared ? m.dram_cycles(a_piece * p.cm, 0, p.cm) + a_chain_fill
                                            : m.dram_cycles(a_piece * cores, 0, cores);
        // With one whole-K tile a core the cn heads' loads of their B pieces meet on the card,
        // each head starting once its A arrived (an A chain's hop apart), so as many overlap as
        // loads of one fit in a hop (m=100 n=1000 k=700, 64 x 128 tiles on 16 cores: the 8
        // heads' 180 KB took 4.9-8.3 us, one alone 1.4; estimated 20.8 us without the term,
        // simulated 23.5). With more tiles the later tiles hide it: the term made 32 x 64
        // tiles' estimate 11% pessimistic there.
        const double b_alone = m.dram_cycles(b_piece, 0, 1);
        const double a_hop = p.a_shared && p.cn > 1 ? a_chain_fill / (p.cn - 1) : 0.0;
        const double b_overlap = a_hop > 0 ? std::clamp(b_alone / a_hop, 1.0, (double)p.cn) : (double)p.cn;
        const double b_head_load = chunked || steps > 1 ? b_alone : std::max(b_alone, m.dram_cycles(b_piece * b_overlap, 0, b_overlap));
        const double chain = b_gathered   ? a_ready + dma(b_step, 0) + b_chain_fill
                             : b_shared ? a_ready + b_head_load + b_chain_fill
                             : p.a_shared && !a_resident ? a_ready : 0.0;
        // Double buffered whole-K tiles: two steps' loads before the first matmul (along a B
        // chain, not: the first matmul follows the first B's forward, m=100 n=1000 k=700 on 8
        // cores, 64 x 128 tiles). Written when the next tile's B load was issued ahead of this
        // tile's bias row; the bias row now lands between the two, and the initialization
        // overlaps the second (init_wait below).
        const double first_loads = (double_buffer && !chunked && !b_shared && steps >= 2 ? 2 : 1) * dma_step;
        // The bias row is read first, by the accumulator's initialization on the SFU; the
        // first matmul waits for that as well as for A and B. With K chunks it runs during the
        // first chunk's loads but is charged in series, as it was fitted. With whole K the bias
        // row loads ahead of B (load_ordering.h: one place, past the last load read after it),
        // so the initialization overlaps only what lands after it: B's load and, along a B
        // chain, B's forwards (with two whole-K tiles double buffered, the second tile's B).
        // m=n=2048 k=64, one 512 x 256 tile a core: 63.6 -> 63.2 us when the bias row moved
        // ahead of B.
        const double b_after_bias = first_loads > dma_step ? dma_step
                                    : b_gathered           ? dma(b_step, 0) + b_chain_fill
                                    : b_shared             ? b_head_load + b_chain_fill
                                                           : dma(b_own, 0);
        const double init_wait = chunked ? sfu_init : std::max(0.0, sfu_init - b_after_bias);
        const double fill = b_panel_fill + panel_fill + std::max(first_loads + bias_dma + r_fill, chain + r_fill) + lat + init_wait;
        // A core stores its first tile once its steps and epilogue are done (its only tile, cut
        // into the tail's row pieces: the first piece). The cores start from the first ones,
        // which wait for no chain, to the chains' last (`fill`), and the stores run at the
        // card's rate from about a quarter of that spread on: in the simulator at m=512 n=512
        // k=64, the first and last cores' first stores and the end of the run were 2.0, 4.5 and
        // 6.7 us with 64 x 128 tiles and 8-core B chains; 1.4, 2.7 and 5.9 us with 64 x 64 tiles;
        // 2.3, 2.4 and 6.6 us with 64 x 128 tiles and B gathered (the stores: 4.1 us at the rate).
        const double first_compute = chunked ? (chunks - 1) * std::max(dma_step, pt_step) + (double_buffer ? lat : chunks * lat) : 0.0;
        const double first_piece = tiles > 1 ? 1.0 : tail_pieces;
        const double first_cores_fill = b_panel_fill + panel_fill + first_loads + bias_dma + r_fill + lat + init_wait;
        first_store = first_cores_fill + std::max(0.0, fill - first_cores_fill) / 4 + first_compute + (pt_step + sfu_tail) / first_piece;
        // Every core stores a tile at about the same time (the cores of a chain
        // start up to its ring latency apart), so a whole-tile store shares the
        // card with the other cores' stores: the card's work for all of them,
        // less the chain's stagger, and at least one core's store alone.
        const double store_bytes = out_tile_bytes;
        const double store_byte_cycles = 1.0 / m.dram_bytes_per_cycle() + (writes_minor ? turnaround_per_byte : 0.0);
        const double stagger = std::max(a_chain_fill, b_gathered ? 0.0 : b_chain_fill);
        const double whole_store = std::max(store_bytes * store_byte_cycles / m.dram_concurrency_efficiency(1),
                                            store_bytes * cores * store_byte_cycles / m.dram_concurrency_efficiency(cores) - stagger);
        // Drain: the last tile's epilogue and store follow its last matmul, cut into
        // `tail_pieces` row pieces (tail_splitting.h): piece i is stored once the PT
        // and the SFU have done its rows, so the store overlaps all but a piece of
        // the last matmul, and a piece's epilogue and store follow the matmul's end.
        // Only the part of that matmul the card's DRAM would otherwise idle in: a step's
        // loads for all cores keep it busy `dram_pace` of a step (m=512 n=k=2048, tm=128
        // tn=256 tk=256 on 32 cores, pace 1.0: the last core stored from 104.8 to 117.9
        // us behind the others' loads and stores, though its first piece was ready 6 us
        // before its last matmul ended; m=8192 n=k=4096 relu, pace 0.5: 10 us faster).
        // With one tile a core, no residual and no transcendental epilogue (stores that follow the
        // matmul's pieces), the loads in flight during the last core's last step are only those of
        // the cores that started less than a step after it; the others' last loads landed before
        // it. So the card idles in the step but for a share `stagger / pt_step` of it (m=n=k=1024
        // on 16 cores, 256 x 256 tiles on 4-core chains 8.3 us apart, 16.2 us steps: drained 7.2
        // us after the last matmul, estimated 10.6 without the term and 8.4 with it; m=n=1536
        // k=2048 on 32 cores now ranks gathered 384 x 192 tiles, 194.5 us, ahead of whole-B
        // 96 x 768, 207.3). Where the steps are DRAM-paced the cores' loads drift apart and spill
        // into the last step anyway, so at least the pace's share of it carries loads (m=512
        // n=k=4096, pace 0.94-0.96: with the stagger alone 256-deep chunks were estimated 2% ahead
        // of 128-deep ones and simulated 0.7% behind). The exclusions: with more tiles the previous
        // tile's stores fill the step; with a residual every core's R tile loads after its last
        // chunk (load_sinking.h); a transcendental epilogue's pieces reach the store later than the
        // matmul's (SwiGLU gate/up at m=512 n=3200 k=4096: 256-deep chunks estimated 1.6% ahead of
        // 64-deep ones with the term, simulated 1.5% behind).
        const bool stores_follow_the_matmul = tiles == 1 && !p.residual && p.epilogue_transcendental_passes == 0;
        const double loads_in_last_step =
            stores_follow_the_matmul ? std::max(dram_pace, std::min(1.0, stagger / pt_step)) : 1.0;
        const double overlap = pt_step * (1.0 - 1.0 / tail_pieces) * std::max(0.0, 1.0 - dram_pace * loads_in_last_step);
        const double drain = sfu_tail / tail_pieces +
                             std::max(whole_store - overlap, whole_store / tail_pieces) + lat +
                             (chunked ? r_all : 0.0);
        // Between tiles a whole store blocks its core's DMA queue, ring forwarding
        // included, so a chain refills for the next tile as for the first: the
        // last core's next matmul waits for its store and the chain's stagger.
        // A B chain of half the cores or more: the other cores' stores slow its head's loads
        // (the spread stores' and the whole-K chains' terms below), a tile's store weighing
        // its bytes and turnaround in card bytes.
        const bool long_b_chain = 2 * p.cm >= m.cores;
        const double stored_tile_bytes = store_bytes * store_byte_cycles * m.dram_bytes_per_cycle();
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
        const int64_t units = p.tm > 1 ? p.tm : (int64_t)(p.tn * p.out_fraction) * (int64_t)out_bytes / m.stick_bytes;
        const int64_t pipelined_trip = p.kp / p.tk / 2 - 1;
        int64_t store_pieces = 0;
        for (int64_t pieces = std::min<int64_t>(pipelined_trip + 1, units); pieces >= 2 && store_pieces == 0; pieces--) {
            if (units % pieces == 0) store_pieces = pieces;
        }
        const bool spreads = chunked && double_buffer && !p.result_double_buffer && pipelined_trip >= 2 && store_pieces > 0;
        const double spread_stores = spreads ? (p.nt >= 2 ? (double)(p.nt - 1) * p.mt : (double)(p.mt - 1)) : 0.0;
        const double whole_stores = tiles - 1 - spread_stores;
        const double between_tiles = whole_stores * whole_store_between + (tiles - 1) * (bias_dma + r_dma + 2 * lat + sfu_init + sfu_tail) +
                                     ((double)p.mt - 1) * panel_fill;
        double body;
        if (chunked) {
            // The K chunks are double buffered within a tile: each tile's first chunk
            // loads before its first matmul, the next ones while the previous matmul runs.
            auto tile_cycles = [&](double step) {
                return double_buffer ? step + lat + (chunks - 1) * std::max(step, pt_step) + pt_step : chunks * (step + lat + pt_step);
            };
            const double tile = tile_cycles(dma_step);
            // A spread store's pieces join the next tile's chunk loads, one piece per
            // iteration (two chunks) of the pipelined K loop. The cores store their
            // pieces at about the same time unless the chain's stagger spreads them
            // over more than an iteration.
            const double iteration = 2 * std::max(dma_step, pt_step);
            const double n_p = std::clamp(cores * 2 * pt_step / std::max(stagger, 2 * pt_step), 1.0, cores);
            const double piece_dma = store_pieces > 0 ? store_bytes / store_pieces * store_byte_cycles * n_p / m.dram_concurrency_efficiency(n_p) : 0.0;
            const double piece_extra = std::max(0.0, std::max(2 * dma_step + piece_dma, 2 * pt_step) - iteration);
            // The other cores' pieces share the card with a chain head's loads (head_step) where
            // the head forwards both operands whole and its B chain spans half the cores or more:
            // where measured, the simulator slowed such a head most (m=n=k=2048, 16-core B chains
            // of 64 x 1024 tiles: 371.7 us, estimated 330.4 without the term), while on shorter
            // or single chains the term only made the estimate pessimistic (m=8192 n=k=4096 relu,
            // 8-core chains: whole B 4190.3 us lost to gathered 4211.3; m=2048 n=512 k=2048 on 16
            // cores with B alone shared: 157.0 against 153.9 us).
            const bool heads_share_the_card = p.a_shared && b_shared && !b_gathered && long_b_chain;
            const double stored_per_step = stored_tile_bytes / chunks;
            const double spread_step = std::max(head_step(heads_share_the_card ? stored_per_step : 0.0), link_step);
            const double spread_tile = tile_cycles(spread_step) + store_pieces * piece_extra;
            body = between_tiles + (tiles - spread_stores) * tile + spread_stores * spread_tile - (dma_step + lat);  // the first chunk's load is the fill
        } else if (b_shared) {
            // Whole-K tiles along a B chain: the PT's matmul of a tile overlaps its core's DMA
            // queue, which takes the next tile's B (loaded or received, and forwarded) and this
            // tile's store, so the slower of the two paces the tiles (m=100 n=1000 k=700 on 8
            // cores, 32 x 64 tiles, 4-core B chains: a tile every 1.95 us, its B load and forward
            // 1.8 and its matmul 1.4; 21.0 us simulated, where serial loads estimated 51.5).
            // The head's loads share the card with the other cores' stores, a tile each a tile,
            // counted (as for the spread stores above) where the B chain spans half the cores or
            // more: m=2048 n=2048 k=512, 64 x 64 tiles, one 32-core chain: the head's 64 KB B load
            // took 0.5-6.2 us, a tile 3.4 us where its matmul takes 2.1 (estimated 113 us without
            // the term, 135 simulated); on 4-core chains (m=100 n=1000 k=700 on 8 cores) the term
            // made the estimate 20% pessimistic. Where it counts, the head's own store of the
            // tile is one of those stores: it takes the head's share of the card alongside its
            // B load (the head then moves 24 KB a tile where the others move 16, m=2048 n=2048
            // k=64 with 128 x 64 tiles on 16-core chains, 22-26 cores storing at once), not
            // one core's rate after it. Charged alone, that plan was estimated at 63.1 us and
            // simulated 65.7; with the share, 66.9, and the planner's choice moved to 256 x 64
            // tiles (64.3 us; six more small-K shapes of the incumbent's benchmark 1-4% faster,
            // m=4096 n=4096 k=32 0.6% and a 3-D @ 2-D bmm at M=1024 K=256 0.9% slower).
            const double stored_per_tile = long_b_chain ? stored_tile_bytes : 0.0;
            const double own_store_after = long_b_chain ? 0.0 : store_bytes * store_byte_cycles / m.dram_concurrency_efficiency(1);
            const double dma_tile = std::max(head_step(stored_per_tile, stored_per_tile), link_step) + own_store_after + bias_dma + r_dma + lat;
            // With two accumulators (acc_ahead) the SFU's initialization and epilogue of one tile
            // run beside the PT's matmul of the next.
            const double compute_tile = p.acc_ahead ? std::max(pt_step, sfu_init + sfu_tail) : pt_step + sfu_init + sfu_tail;
            // (One row of tiles a core: at a next row the chain would refill, which this does
            // not follow; matmul offers these plans with one row, matmul_schedule.cpp.)
            // Single buffered, the next tile's B lands only after this tile's matmul.
            const double tile = double_buffer ? std::max(dma_tile, compute_tile) : dma_tile + compute_tile;
            body = pt_step + (steps - 1) * tile;
        } else {
            // Whole-K tiles: the B of tile t + 2 is issued after the store of tile t
            // and before the bias of tile t + 1, so past the fill each tile's B load
            // sits between two matmuls even when double buffered.
            const double loads_rest = std::max(0.0, steps * dma_step - first_loads), pt_all = steps * pt_step;
            body = between_tiles + loads_rest + pt_all + (double_buffer ? 0.0 : (steps - 1) * lat);
            // Two accumulators: the SFU's initialization and epilogue of a tile run beside the
            // next tile's matmul. Only that: the stores and the loads stay where they were (at
            // m=n=2048 k=512 on 4 cores, 256 x 256 tiles, charging each tile only its busiest
            // unit estimated 519.2 us, simulated 559.8: a row of tiles' A panel stalls the PT).
            if (p.acc_ahead) body -= (steps - 1) * std::min(sfu_init + sfu_tail, pt_step);
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
    // the last loads landed while the last matmul and the epilogue run their first
    // piece (the last stores follow it): the card's DRAM work cannot fill those.
    const double dram_idle = (pt_step + sfu_tail) / tail_pieces + 2 * lat;
    // Nor, where the kernel writes more than it reads, before the first stores: the card's
    // DRAM then moves only the first tiles' loads until the first cores store, and every
    // byte after (the other tiles' loads, all stores) at its rate (gen_matmul m=2048 n=2048
    // k=64: the first stores start at 10 us, the card then stores 8 MB for 59 us).
    // The turnaround stays the whole run's (DramModel::start charges it to the stores until
    // they outnumber the bytes read: m=512 n=512 k=64, the 512 KB of stores took 4.2 us).
    const double reads_after = cost.read_bytes * (1.0 - 1.0 / tiles);
    const double turnaround_before = turnaround_per_byte * (std::min(cost.read_bytes, cost.write_bytes) -
                                                            std::min(reads_after, cost.write_bytes));
    const double store_bound = first_store + m.dram_cycles(reads_after, cost.write_bytes, cores) + turnaround_before + lat;
    cost.per_core_cycles = per_core;
    cost.dram_cycles = writes_minor ? dram_all + dram_idle : std::max(dram_all + dram_idle, store_bound);
    cost.cycles = std::max(per_core, cost.dram_cycles);
    return cost;
}



bool gathered_chain_offered(int chain_cores, int spacing, int tk, int k, const MachineDescription &m) {
    const bool whole_ring_long_steps = chain_cores == m.cores && (tk < k || tk >= kLongGatheredChainMinK);
    return chain_cores >= 2 && (chain_cores <= kMaxGatheredChain || whole_ring_long_steps) && chain_cores * spacing == m.cores &&
           tk >= chain_cores && k % tk == 0;
}

}  // namespace planning
}  // namespace spyre
