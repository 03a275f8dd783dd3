// Ring sharing of staged tiles (see ring_sharing.h).
#include "program_tree/ring_sharing.h"


#include <algorithm>
#include <map>
#include <sstream>

#include "diagnostics.h"
#include "program_tree/program_tree.h"

namespace spyre {
namespace compiler {

namespace {

namespace L = isa::field::DmaLoad;

[[noreturn]] void fail(const std::string &func, const std::string &rule) {
    throw CompileError("Spyre: share_over_ring(Func '" + func + "'): " + rule);
}

struct SharedLoad {
    ProgramNode *node;
    std::string key;  // the loops around it and every operand: equal keys load the same bytes to the same place
    double bytes = 0;  // the bytes it moves over the whole program (a tile per iteration of its loops)
};

// The bytes each ring link carries per direction (a link is named by the core it leaves), as
// ring.put routes them: the shorter way round (the simulator's ring model).
struct RingLoad {
    std::vector<double> clockwise, counter;
    explicit RingLoad(int cores) : clockwise(cores, 0.0), counter(cores, 0.0) {}

    // Calls f(link load) for every link of the hops along `chain`.
    template <typename F>
    void for_each_link(const std::vector<int> &chain, F f) {
        const int n = (int)clockwise.size();
        for (size_t p = 0; p + 1 < chain.size(); p++) {
            const int forward = ((chain[p + 1] - chain[p]) % n + n) % n;
            const bool cw = forward <= n - forward;
            for (int step = 0; step < (cw ? forward : n - forward); step++) {
                const int from = cw ? (chain[p] + step) % n : ((chain[p] - step) % n + n) % n;
                f(cw ? clockwise[from] : counter[from]);
            }
        }
    }
    double busiest(const std::vector<int> &chain, double bytes) {
        double most = 0;
        for_each_link(chain, [&](double &l) { most = std::max(most, l + bytes); });
        return most;
    }
    void add(const std::vector<int> &chain, double bytes) {
        for_each_link(chain, [&](double &l) { l += bytes; });
    }
};

void describe_operand(std::ostringstream &os, const SymOperand &o) {
    os << o.base;
    for (size_t d = 0; d < o.coef.size(); d++) {
        if (o.coef[d] != 0) os << '+' << o.coef[d] << "*L" << d;
    }
}

// The loads of `func` in tree order; `computed` is set when an instruction of another kind implements it.
void collect(std::vector<ProgramNode> &nodes, const std::string &func, std::vector<int64_t> &trips,
             std::vector<SharedLoad> &out, bool &computed) {
    for (ProgramNode &n : nodes) {
        if (n.kind == ProgramNode::Kind::Loop) {
            trips.push_back(n.trip);
            collect(n.body, func, trips, out, computed);
            trips.pop_back();
            continue;
        }
        if (n.inst.func != func) continue;
        if (n.inst.op != isa::Opcode::DmaLoad) {
            // A copy of the overlap with the previous tile is local: only the load's new bytes travel.
            if (!n.inst.copies_staged_overlap) computed = true;
            continue;
        }
        std::ostringstream os;
        os << "loops";
        double bytes = (double)n.inst.f[L::row_bytes].base * n.inst.f[L::rows].base * n.inst.f[L::planes].base;
        for (int64_t t : trips) {
            os << ' ' << t;
            bytes *= (double)t;
        }
        for (int i = 0; i < isa::opcode_spec(n.inst.op).num_fields; i++) {
            os << (i ? ',' : ':');
            describe_operand(os, n.inst.f[i]);
        }
        out.push_back({&n, os.str(), bytes});
    }
}

// The load's bytes in the scratchpad, which must be one contiguous range (a ring transfer is contiguous).
int64_t contiguous_bytes(const SymInstruction &in) {
    const int64_t row = in.f[L::row_bytes].base, rows = in.f[L::rows].base, planes = in.f[L::planes].base;
    const bool rows_ok = rows == 1 || in.f[L::sp_row_stride].base == row;
    const bool planes_ok = planes == 1 || in.f[L::sp_plane_stride].base == rows * row;
    if (!rows_ok || !planes_ok) {
        fail(in.func, "its tile is not contiguous in the scratchpad (" + std::to_string(rows) + " rows of " +
                          std::to_string(row) + " bytes every " + std::to_string(in.f[L::sp_row_stride].base) +
                          " bytes); a ring transfer moves one contiguous range. Stage the tile with whole "
                          "rows of the tensor, or do not share it");
    }
    return row * rows * planes;
}

// A gathered Func's load must cut into `shares` shares of whole units at fixed offsets.
void check_gatherable(const SymInstruction &in, int shares, int64_t stick_bytes) {
    const GatherCut cut = gather_cut(in.f[L::planes].base, in.f[L::rows].base, in.f[L::row_bytes].base, stick_bytes);
    if (cut.units < shares) {
        fail(in.func, std::string("gathered: its tile has ") + std::to_string(cut.units) + " " + cut.unit_name +
                          " for a chain of " + std::to_string(shares) + " cores, each of which loads a share of whole " +
                          cut.unit_name + "; forward it whole (RingForwarding::WholeTiles) or stage larger tiles");
    }
    // The share's count, its valid count and its strides are the load's bases (gathered_share_load).
    const bool varies = in.f[cut.count_field].depends_on_loops() || in.f[cut.valid_field].depends_on_loops() ||
                        (cut.dram_stride_field >= 0 && in.f[cut.dram_stride_field].depends_on_loops()) ||
                        (cut.sp_stride_field >= 0 && in.f[cut.sp_stride_field].depends_on_loops());
    if (varies) {
        fail(in.func, std::string("gathered: its tile's valid ") + cut.unit_name + " (or their DRAM stride) change from tile to "
                          "tile, so a share's would not be a loop operand; forward it whole (RingForwarding::WholeTiles)");
    }
}

// The shape of a core's program: loops (trip counts) and instructions (opcode and Func) in order.
void skeleton(const std::vector<ProgramNode> &nodes, std::string &out) {
    for (const ProgramNode &n : nodes) {
        if (n.kind == ProgramNode::Kind::Loop) {
            out += "L" + std::to_string(n.trip) + "{";
            skeleton(n.body, out);
            out += "}";
        } else {
            out += std::string(isa::opcode_spec(n.inst.op).mnemonic) + ":" + n.inst.func + ";";
        }
    }
}

}  // namespace

void share_loads_over_ring(std::vector<std::vector<ProgramNode> *> &trees, const std::set<std::string> &funcs,
                           const std::set<std::string> &in_pieces, const MachineDescription &m,
                           const std::set<std::string> &gathered) {
    if (funcs.empty()) return;
    const int cores = (int)trees.size();
    std::vector<std::string> shapes(cores);
    std::set<int64_t> stored;
    for (int c = 0; c < cores; c++) {
        skeleton(*trees[c], shapes[c]);
        collect_stored_args(*trees[c], stored);
    }
    int index = 0;
    for (const std::string &func : funcs) {
        std::vector<std::vector<SharedLoad>> loads(cores);
        bool computed = false;
        for (int c = 0; c < cores; c++) {
            std::vector<int64_t> trips;
            collect(*trees[c], func, trips, loads[c], computed);
        }
        if (computed) {
            fail(func, "it is computed on the core (PT or SFU), not copied from DRAM by DMA; only a staged "
                       "copy of an input (stage_in_scratchpad of input.in()) can be shared over the ring");
        }
        bool any = false;
        for (const auto &l : loads) any = any || !l.empty();
        if (!any) continue;  // a Func of another pipeline scheduled into the same context
        const int data_channel = kUnitPairChannels + 2 * index, credit_channel = data_channel + 1;
        if (index >= kMaxSharedFuncs || credit_channel >= m.token_channels_per_core) {
            fail(func, "too many Funcs shared over the ring in one kernel: at most " + std::to_string(kMaxSharedFuncs) +
                       " (each needs 2 of a core's " + std::to_string(m.token_channels_per_core) + " token channels)");
        }
        index++;
        for (int c = 0; c < cores; c++) {
            if (!loads[c].empty() && stored.count(loads[c].front().node->inst.f[L::arg].base)) {
                fail(func, "the kernel also writes the tensor it copies, so a core receiving the tile would read "
                           "it as the first core of its chain saw it, not at its own point in the program; do not "
                           "share a Func whose tensor the kernel writes");
            }
        }

        // Chains: cores with the same program shape and equal load sequences, in core order.
        std::map<std::string, std::vector<int>> chains;
        for (int c = 0; c < cores; c++) {
            if (loads[c].empty()) continue;
            std::string key = shapes[c] + "|";
            for (const SharedLoad &l : loads[c]) key += l.key + ";";
            chains[key].push_back(c);
        }
        RingLoad ring(m.cores);
        size_t longest = 0;
        for (const auto &kv : chains) longest = std::max(longest, kv.second.size());
        if (longest < 2) {
            fail(func, "no two cores load the same tile of it (its tile depends on the core loop), so there is "
                       "nothing to share; share a Func whose tile is the same on several cores, such as the A "
                       "tile of a matmul whose cores are split along N only");
        }
        for (auto &kv : chains) {
            std::vector<int> &chain = kv.second;
            if (chain.size() < 2) continue;
            // A chain of a Func forwarded in pieces, whose cost is the chains' fill, runs the way
            // round (core order or its reverse) whose busiest link carries the least so far of
            // this Func's chains, which fill at the same time: chains that interleave on the ring
            // (the weights of a conv whose cores split the channels fastest) then share the two
            // directions, not one. Whole tiles keep core order: a matmul's A (along N) and B
            // (along M) cross the core grid as one wavefront, which a reversed chain would turn
            // into a longer path (gen_matmul m = n = k = 512: 16.5 us in core order, 17.3 us with
            // half the B chains reversed; 2048: 378 and 865 us).
            double bytes = 0;
            for (const SharedLoad &l : loads[chain.front()]) bytes += l.bytes;
            if (gathered.count(func)) {
                // A closed chain in core order: every core loads its share and forwards the
                // others' round it (a share crosses n - 1 hops, the least any gather needs;
                // putting each share straight to every other core crosses more links and
                // the puts wait for them: gen_matmul m=512 n=k=2048, 64 x 512 tiles on
                // 8 x 4 cores, 128 us round the chain, 192 us straight).
                const int n = (int)chain.size();
                std::vector<int> closed = chain;
                closed.push_back(chain.front());
                ring.add(closed, bytes * (n - 1) / n);
                for (int p = 0; p < n; p++) {
                    for (SharedLoad &l : loads[chain[p]]) {
                        check_gatherable(l.node->inst, n, m.stick_bytes);
                        RingShare &r = l.node->inst.ring;
                        r.role = RingShare::Role::Gathered;
                        r.upstream = chain[(p + n - 1) % n];
                        r.downstream = chain[(p + 1) % n];
                        r.position = p;
                        r.chain_cores = n;
                        r.data_channel = data_channel;
                        r.credit_channel = credit_channel;
                        r.bytes = contiguous_bytes(l.node->inst);
                    }
                }
                continue;
            }
            std::vector<int> reversed(chain.rbegin(), chain.rend());
            if (in_pieces.count(func) && ring.busiest(reversed, bytes) < ring.busiest(chain, bytes)) chain = reversed;
            ring.add(chain, bytes);
            for (size_t p = 0; p < chain.size(); p++) {
                const int c = chain[p];
                for (SharedLoad &l : loads[c]) {
                    RingShare &r = l.node->inst.ring;
                    r.role = p == 0 ? RingShare::Role::First
                                    : (p + 1 == chain.size() ? RingShare::Role::Last : RingShare::Role::Middle);
                    r.upstream = p > 0 ? chain[p - 1] : -1;
                    r.downstream = p + 1 < chain.size() ? chain[p + 1] : -1;
                    r.data_channel = data_channel;
                    r.credit_channel = credit_channel;
                    r.bytes = contiguous_bytes(l.node->inst);
                    r.in_pieces = in_pieces.count(func) > 0;
                }
            }
        }
    }
}

GatherCut gather_cut(int64_t planes, int64_t rows, int64_t row_bytes, int64_t stick_bytes) {
    namespace D = isa::field::DmaLoad;
    if (planes > 1) return {D::planes, D::valid_planes, D::dram_plane_stride, D::sp_plane_stride, planes, rows * row_bytes, "planes"};
    if (rows > 1) return {D::rows, D::valid_rows, D::dram_row_stride, D::sp_row_stride, rows, row_bytes, "rows"};
    return {D::row_bytes, D::valid_bytes, -1, -1, row_bytes / stick_bytes, stick_bytes, "sticks"};
}

GatheredShare gathered_share(int64_t units, int share, int shares) {
    const int64_t first = units * share / shares, end = units * (share + 1) / shares;
    return {first, end - first};
}

isa::Instruction gathered_share_load(const isa::Instruction &load, int share, int shares, int64_t stick_bytes) {
    namespace D = isa::field::DmaLoad;
    isa::Instruction l = load;
    const GatherCut cut = gather_cut(load.f[D::planes].base, load.f[D::rows].base, load.f[D::row_bytes].base, stick_bytes);
    const GatheredShare s = gathered_share(cut.units, share, shares);
    // A cut along a row counts bytes; along rows or planes, rows or planes.
    const int64_t scale = cut.dram_stride_field < 0 ? stick_bytes : 1;
    const int64_t dram_step = cut.dram_stride_field < 0 ? stick_bytes : load.f[cut.dram_stride_field].base;
    const int64_t sp_step = cut.sp_stride_field < 0 ? stick_bytes : load.f[cut.sp_stride_field].base;
    l.f[cut.count_field].base = s.count * scale;
    l.f[D::dram].base += s.first * dram_step;
    l.f[D::sp].base += s.first * sp_step;
    l.f[cut.valid_field].base = std::clamp<int64_t>(load.f[cut.valid_field].base - s.first * scale, 0, s.count * scale);
    return l;
}

std::vector<int64_t> ring_forward_pieces(int64_t bytes, bool in_pieces, const MachineDescription &m) {
    const int64_t piece = kRingPieceSticks * m.stick_bytes;
    if (!in_pieces) return {bytes};
    std::vector<int64_t> pieces;
    for (int64_t offset = 0; offset < bytes; offset += piece) pieces.push_back(std::min(piece, bytes - offset));
    if (pieces.empty()) pieces.push_back(bytes);
    return pieces;
}

}  // namespace compiler
}  // namespace spyre
