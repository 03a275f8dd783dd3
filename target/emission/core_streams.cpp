// Stream emission with token synchronization (see core_streams.h).
#include "emission/core_streams.h"

#include "program_tree/ring_sharing.h"
#include "program_tree/scratchpad_accesses.h"

#include <algorithm>
#include <set>
#include <string>

#include "diagnostics.h"

namespace spyre {
namespace compiler {

namespace {

namespace fld = isa::field;
constexpr int U = isa::kNumUnits;

int channel_of(int from, int to) { return from * U + to; }
static_assert(U * U == kUnitPairChannels, "one channel per directed unit pair");

struct ItemSummary {
    std::array<std::vector<ScratchpadAccess>, U> acc;
    std::array<bool, U> uses{};
};

void summarize(const ProgramNode &n, std::vector<int64_t> &trips, ItemSummary &s) {
    if (n.kind == ProgramNode::Kind::Instruction) {
        const int u = (int)n.inst.unit();
        s.uses[u] = true;
        for (auto &a : instruction_accesses(n.inst, trips)) s.acc[u].push_back(a);
        return;
    }
    trips.push_back(n.trip);
    for (const ProgramNode &c : n.body) summarize(c, trips, s);
    trips.pop_back();
}

isa::Operand to_operand(const SymOperand &s, const MachineDescription &m, const SymInstruction &in) {
    isa::Operand o;
    o.base = s.base;
    for (size_t d = 0; d < s.coef.size(); d++) {
        if (s.coef[d] == 0) continue;
        if ((int64_t)d >= m.max_loop_depth) {
            throw CompileError("Spyre: in Func '" + in.func + "': the loop nest around " +
                               isa::opcode_spec(in.op).mnemonic + " needs " + std::to_string(d + 1) +
                               " hardware loop levels, the machine has " + std::to_string(m.max_loop_depth) +
                               "; fuse outer loops into the core split or make tiles larger");
        }
        if (s.coef[d] > INT32_MAX || s.coef[d] < INT32_MIN) {
            throw CompileError("Spyre: in Func '" + in.func + "': a loop step of " + std::to_string(s.coef[d]) +
                               " bytes does not fit the 32-bit address stride of " + isa::opcode_spec(in.op).mnemonic);
        }
        o.stride[d] = (int32_t)s.coef[d];
    }
    return o;
}

class StreamEmitter {
public:
    explicit StreamEmitter(const MachineDescription &m) : m_(m) {}

    using Streams = std::array<std::vector<isa::Instruction>, U>;
    template <typename T>
    using PerPair = std::array<std::array<T, U>, U>;

    // What a loop leaves to the items after it: per unit pair (u1 to u2), the tokens its
    // last iteration signalled for the next one (loop-carried), in signalling order, each
    // named by the body item that signalled it; and the body items' accesses (over all
    // iterations), so that an item after the loop can take the first of those tokens that
    // follows the last body item it conflicts with, instead of a signal after the loop.
    struct LoopExit {
        PerPair<std::vector<int>> leftover;  // body item of each leftover token, in order
        // Per leftover token: signalled after its whole item (the item's own signal), not by an
        // inner loop of the item partway through it (that loop's own leftover tokens).
        PerPair<std::vector<bool>> after_item;
        std::vector<ItemSummary> body;
        int carried(int u1, int u2) const { return (int)leftover[u1][u2].size(); }
    };

    // Emits `items` into `out`. For a loop body (`exit` given), the loop-carried tokens
    // are waited for where the next iteration first needs them, not at the end of the
    // body: the emitter of the loop signals them once before the loop (the first
    // iteration has no predecessor), and the items after the loop take the last
    // iteration's as they need them (`exit`); a body that is not a loop's takes the
    // ones nothing took at its end.
    void emit_body(const std::vector<ProgramNode> &items, std::vector<int64_t> &trips, Streams &out,
                   LoopExit *exit = nullptr) {
        const bool is_loop_body = exit != nullptr;
        const int n = (int)items.size();
        std::vector<ItemSummary> sum(n);
        for (int i = 0; i < n; i++) summarize(items[i], trips, sum[i]);
        // The loops first: what each leaves to the items after it decides their waits.
        std::vector<Streams> loop_out(n);
        std::vector<LoopExit> exits(n);
        for (int i = 0; i < n; i++) {
            if (items[i].kind == ProgramNode::Kind::Loop) emit_loop(items[i], trips, loop_out[i], exits[i]);
        }

        // marks[i][u1][u2]: item i's unit u1 signals u2 afterwards. waits[j]: (u2, u1, source
        // item, and for a loop source the index of its leftover token the wait takes, or -1
        // for its signal after the loop).
        std::vector<PerPair<bool>> marks(n);
        for (auto &m : marks)
            for (auto &r : m) r.fill(false);
        struct Wait {
            int to, from, source, leftover;
        };
        std::vector<std::vector<Wait>> waits(n);
        int observed[U][U];
        for (auto &r : observed)
            for (int &v : r) v = -1;
        auto find_source = [&](int j_limit_exclusive, int u1, int u2, const std::vector<ScratchpadAccess> &sink,
                               int lower_exclusive) {
            for (int i = j_limit_exclusive - 1; i > lower_exclusive; i--) {
                if (sum[i].uses[u1] && accesses_conflict(sum[i].acc[u1], sink)) return i;
            }
            return -1;
        };
        // The first leftover token of loop item i (u1 to u2) signalled after the whole last
        // body item on u1 conflicting with `sink` (by a later item, or by that item itself
        // once it has finished, not by a loop inside it partway through), or -1 (the signal
        // after the loop is needed).
        auto leftover_token = [&](int i, int u1, int u2, const std::vector<ScratchpadAccess> &sink) {
            if (items[i].kind != ProgramNode::Kind::Loop) return -1;
            const LoopExit &e = exits[i];
            int last = -1;
            for (int b = (int)e.body.size() - 1; b >= 0 && last < 0; b--) {
                if (e.body[b].uses[u1] && accesses_conflict(e.body[b].acc[u1], sink)) last = b;
            }
            if (last < 0) return -1;
            const std::vector<int> &l = e.leftover[u1][u2];
            const std::vector<bool> &whole = e.after_item[u1][u2];
            for (int t = 0; t < (int)l.size(); t++) {
                if (l[t] > last || (l[t] == last && whole[t])) return t;
            }
            return -1;
        };
        for (int j = 0; j < n; j++) {
            for (int u2 = 0; u2 < U; u2++) {
                if (!sum[j].uses[u2]) continue;
                for (int u1 = 0; u1 < U; u1++) {
                    if (u1 == u2) continue;
                    int i = find_source(j, u1, u2, sum[j].acc[u2], observed[u2][u1]);
                    if (i < 0) continue;
                    const int t = leftover_token(i, u1, u2, sum[j].acc[u2]);
                    waits[j].push_back({u2, u1, i, t});
                    if (t >= 0) {
                        // Synchronized with everything before the loop, and with the loop only
                        // up to that token: a later item may still need more of it.
                        observed[u2][u1] = i - 1;
                    } else {
                        marks[i][u1][u2] = true;
                        observed[u2][u1] = i;
                    }
                }
            }
        }
        // carried_source[j][u1][u2]: the latest item of this iteration whose token (u1 to u2)
        // the next iteration's item j needs (-1: none).
        std::vector<PerPair<int>> carried_source(n);
        for (auto &m : carried_source)
            for (auto &r : m) r.fill(-1);
        if (is_loop_body) {
            // Loop-carried: the next iteration's item j against this iteration's items after `observed`.
            for (int j = 0; j < n; j++) {
                for (int u2 = 0; u2 < U; u2++) {
                    if (!sum[j].uses[u2]) continue;
                    for (int u1 = 0; u1 < U; u1++) {
                        if (u1 == u2) continue;
                        int i = find_source(n, u1, u2, sum[j].acc[u2], observed[u2][u1]);
                        if (i < 0) continue;
                        marks[i][u1][u2] = true;
                        carried_source[j][u1][u2] = i;
                    }
                }
            }
        }

        // Emission with token counting per channel. The tokens of a channel, in order: per
        // item, a loop's leftover tokens (signalled inside it), then the item's own signal.
        int consumed[U][U] = {};
        auto tokens_up_to = [&](int u1, int u2, int i) {
            int c = 0;
            for (int k = 0; k <= i; k++) c += exits[k].carried(u1, u2) + marks[k][u1][u2];
            return c;
        };
        auto take = [&](int u1, int u2, int through, std::vector<isa::Instruction> &s) {
            const int need = through - consumed[u2][u1];
            for (int k = 0; k < need; k++) s.push_back(make(isa::Opcode::Wait, channel_of(u1, u2)));
            consumed[u2][u1] += std::max(need, 0);
        };
        std::vector<Streams> item_out(n);  // each item's instructions with its own waits and signals
        for (int j = 0; j < n; j++) {
            for (const Wait &w : waits[j]) {
                const int through = w.leftover >= 0 ? tokens_up_to(w.from, w.to, w.source - 1) + w.leftover + 1
                                                    : tokens_up_to(w.from, w.to, w.source);
                take(w.from, w.to, through, item_out[j][w.to]);
            }
            if (items[j].kind == ProgramNode::Kind::Loop) {
                drain_before_loop(j, tokens_up_to, consumed, loop_out[j], item_out[j]);
            } else {
                emit_item(items[j], trips, item_out[j], take_gather_riders(items, j, marks, item_out));
            }
            for (int u1 = 0; u1 < U; u1++) {
                for (int u2 = 0; u2 < U; u2++) {
                    if (marks[j][u1][u2]) item_out[j][u1].push_back(make(isa::Opcode::Signal, channel_of(u1, u2)));
                }
            }
        }
        if (is_loop_body) {
            exit->body = sum;
            // The tokens left at the end of an iteration are the previous iteration's when the
            // next one takes them. Tokens are taken in order per channel, so each item takes
            // the leftover tokens up to the last one it needs, and all of them before any wait
            // of its own on their channel (for its own iteration's tokens, an inner loop's);
            // the rest are taken at the end of the body.
            for (int u1 = 0; u1 < U; u1++) {
                for (int u2 = 0; u2 < U; u2++) {
                    if (u1 == u2) continue;
                    const int rest = tokens_up_to(u1, u2, n - 1) - consumed[u2][u1];
                    if (rest <= 0) continue;
                    // The leftover tokens' items, in signalling order: the last `rest` tokens. Per
                    // item: an inner loop's leftover tokens, then the item's own signal.
                    std::vector<int> all;
                    std::vector<bool> whole;
                    for (int i = 0; i < n; i++) {
                        all.insert(all.end(), (size_t)exits[i].carried(u1, u2), i);
                        whole.insert(whole.end(), (size_t)exits[i].carried(u1, u2), false);
                        if (marks[i][u1][u2]) {
                            all.push_back(i);
                            whole.push_back(true);
                        }
                    }
                    const std::vector<int> leftover(all.end() - rest, all.end());
                    exit->leftover[u1][u2] = leftover;
                    exit->after_item[u1][u2] = std::vector<bool>(whole.end() - rest, whole.end());
                    const int64_t ch = channel_of(u1, u2);
                    int taken = 0;
                    for (int j = 0; j < n && taken < rest; j++) {
                        const auto &s = item_out[j][u2];
                        const bool waits_itself = std::any_of(s.begin(), s.end(), [&](const isa::Instruction &in) {
                            return in.op == isa::Opcode::Wait && in.f[fld::Wait::channel].base == ch;
                        });
                        int target = taken;
                        if (waits_itself) {
                            target = rest;
                        } else if (carried_source[j][u1][u2] >= 0) {
                            while (target < rest && leftover[target] <= carried_source[j][u1][u2]) target++;
                        }
                        if (target > taken) {
                            auto &d = item_out[j][u2];
                            d.insert(d.begin(), target - taken, make(isa::Opcode::Wait, ch));
                            taken = target;
                        }
                    }
                    for (; taken < rest; taken++) item_out[n - 1][u2].push_back(make(isa::Opcode::Wait, ch));
                }
            }
        } else if (n > 0) {
            // Not a loop's body: whatever a loop left and nothing took is taken at the end.
            for (int u1 = 0; u1 < U; u1++) {
                for (int u2 = 0; u2 < U; u2++) {
                    if (u1 != u2) take(u1, u2, tokens_up_to(u1, u2, n - 1), item_out[n - 1][u2]);
                }
            }
        }
        for (int j = 0; j < n; j++) {
            for (int u = 0; u < U; u++) out[u].insert(out[u].end(), item_out[j][u].begin(), item_out[j][u].end());
        }
    }

private:
    // The riders of item j, a gathered share (gather_riders.h), taken out of the DMA streams of
    // the items before it, nearest last: a rider moves when its item signals nothing on the DMA
    // queue (no unit is told it has landed before the rounds end) and its stream ends in its
    // load (its waits stay where they are, ahead of it); one that cannot move stops the rest.
    static std::vector<isa::Instruction> take_gather_riders(const std::vector<ProgramNode> &items, int j,
                                                            const std::vector<PerPair<bool>> &marks,
                                                            std::vector<Streams> &item_out) {
        std::vector<isa::Instruction> riders;
        const ProgramNode &share = items[j];
        if (share.kind != ProgramNode::Kind::Instruction || share.inst.ring.role != RingShare::Role::Gathered ||
            share.inst.ring.position == 0)
            return riders;  // position 0 forwards its own share first: its loads stay ahead
        const int dma = (int)isa::Unit::Dma;
        for (int i = j - 1; i >= 0 && i >= j - share.inst.ring.riders; i--) {
            std::vector<isa::Instruction> &s = item_out[i][dma];
            bool signals = false;
            for (int u = 0; u < U; u++) signals = signals || marks[i][dma][u];
            if (signals || s.empty() || s.back().op != isa::Opcode::DmaLoad) break;
            riders.insert(riders.begin(), s.back());
            s.pop_back();
        }
        return riders;
    }

    // A signal or wait on channel `channel`.
    static isa::Instruction make(isa::Opcode op, int64_t channel) {
        static_assert(fld::Signal::channel == 0 && fld::Signal::kNumFields == 1 && fld::Wait::channel == 0 &&
                          fld::Wait::kNumFields == 1,
                      "signal and wait have one field, the channel");
        return isa::make_instruction(op, {channel});
    }

    // Emits loop item j (its streams `body`, from emit_loop). Tokens are consumed in order
    // per channel, so a token signalled before the loop and still unconsumed would be taken
    // by the first wait on its channel inside the loop, and every wait after it would pair
    // with the token before its own: the consumer drains such tokens before the loop (they
    // were due before some later item anyway, so this only moves waits earlier).
    template <typename TokensUpTo>
    void drain_before_loop(int j, const TokensUpTo &tokens_up_to, int (&consumed)[U][U], const Streams &body,
                           Streams &out) {
        for (int u1 = 0; u1 < U; u1++) {
            for (int u2 = 0; u2 < U; u2++) {
                if (u1 == u2) continue;
                const int pending = j > 0 ? tokens_up_to(u1, u2, j - 1) - consumed[u2][u1] : 0;
                if (pending <= 0) continue;
                const int64_t ch = channel_of(u1, u2);
                bool waits_inside = false;
                for (const isa::Instruction &in : body[u2]) {
                    waits_inside |= in.op == isa::Opcode::Wait && in.f[fld::Wait::channel].base == ch;
                }
                if (!waits_inside) continue;
                for (int k = 0; k < pending; k++) out[u2].push_back(make(isa::Opcode::Wait, ch));
                consumed[u2][u1] += pending;
            }
        }
        for (int u = 0; u < U; u++) out[u].insert(out[u].end(), body[u].begin(), body[u].end());
    }

    // A shared load (ring_sharing.h): receive it (or load it, first in the chain), then forward it,
    // whole or in the pieces of ring_forward_pieces(): a core forwards each piece as soon as it
    // has arrived, so the tile streams down the chain instead of hopping whole.
    // A gathered share's `riders` (gather_riders.h) are issued after this core's position-th forward.
    static void emit_ring_share(const RingShare &r, const isa::Instruction &load, std::vector<isa::Instruction> &dma,
                                const std::vector<isa::Instruction> &riders, const MachineDescription &m) {
        const isa::Operand &sp = load.f[fld::DmaLoad::sp];
        auto put = [&](int to, int64_t offset, int64_t bytes, int channel) {
            isa::Instruction p;
            p.op = isa::Opcode::RingPut;
            p.f[fld::RingPut::dst_core].base = to;
            p.f[fld::RingPut::src] = sp;
            p.f[fld::RingPut::src].base += offset;
            p.f[fld::RingPut::dst] = p.f[fld::RingPut::src];
            p.f[fld::RingPut::bytes].base = bytes;
            p.f[fld::RingPut::dst_channel].base = channel;
            dma.push_back(p);
        };
        if (r.role == RingShare::Role::Gathered) {
            // Load my share, then pass each share round the closed chain (ring_sharing.h): a
            // share's bytes are its rows' (or planes'), contiguous in the scratchpad.
            namespace D = fld::DmaLoad;
            const GatherCut cut = gather_cut(load.f[D::planes].base, load.f[D::rows].base, load.f[D::row_bytes].base, m.stick_bytes);
            const int n = r.chain_cores;
            auto share_put = [&](int share) {
                const GatheredShare s = gathered_share(cut.units, share, n);
                put(r.downstream, s.first * cut.unit_bytes, s.count * cut.unit_bytes, r.data_channel);
            };
            auto ride = [&](int forwards) {
                if (forwards == r.position) dma.insert(dma.end(), riders.begin(), riders.end());
            };
            put(r.upstream, 0, 0, r.credit_channel);  // my copy of the buffer is free
            dma.push_back(gathered_share_load(load, r.position, n, m.stick_bytes));
            dma.push_back(make(isa::Opcode::Wait, r.credit_channel));  // my successor's copy is free
            share_put(r.position);
            ride(1);
            for (int i = 1; i < n; i++) {
                dma.push_back(make(isa::Opcode::Wait, r.data_channel));  // share position - i has arrived
                if (i < n - 1) {
                    share_put((r.position - i + n) % n);
                    ride(i + 1);
                }
            }
            return;
        }
        const std::vector<int64_t> pieces = ring_forward_pieces(r.bytes, r.in_pieces, m);
        if (r.role == RingShare::Role::First) {
            dma.push_back(load);
        } else {
            put(r.upstream, 0, 0, r.credit_channel);  // my copy of the buffer is free
        }
        int64_t offset = 0;
        for (size_t i = 0; i < pieces.size(); i++) {
            if (r.role != RingShare::Role::First) dma.push_back(make(isa::Opcode::Wait, r.data_channel));
            // Before the first piece leaves: the successor's copy is free.
            if (i == 0 && r.role != RingShare::Role::Last) dma.push_back(make(isa::Opcode::Wait, r.credit_channel));
            if (r.role != RingShare::Role::Last) put(r.downstream, offset, pieces[i], r.data_channel);
            offset += pieces[i];
        }
    }

    // `riders`: the loads a gathered share's rounds carry (take_gather_riders).
    void emit_item(const ProgramNode &node, std::vector<int64_t> &trips, Streams &out,
                   const std::vector<isa::Instruction> &riders = {}) {
        if (node.kind == ProgramNode::Kind::Instruction) {
            isa::Instruction inst;
            inst.op = node.inst.op;
            for (int i = 0; i < isa::opcode_spec(inst.op).num_fields; i++) {
                inst.f[i] = to_operand(node.inst.f[i], m_, node.inst);
            }
            if (node.inst.ring.role != RingShare::Role::None) {
                emit_ring_share(node.inst.ring, inst, out[(int)isa::Unit::Dma], riders, m_);
            } else {
                out[(int)node.inst.unit()].push_back(inst);
            }
            return;
        }
        throw CompileError("Spyre: internal error: a loop reached emit_item (loops go through emit_loop)");
    }

    // A loop: its body's streams between loop and endloop, and the loop-carried tokens
    // signalled once before it for the first iteration's waits. The last iteration's are
    // left in `exit` for the items after the loop (emit_body).
    void emit_loop(const ProgramNode &node, std::vector<int64_t> &trips, Streams &out, LoopExit &exit) {
        if ((int64_t)trips.size() >= m_.max_loop_depth) {
            throw CompileError("Spyre: loop '" + node.loop_name + "' would be hardware loop level " +
                               std::to_string(trips.size() + 1) + ", the machine has " +
                               std::to_string(m_.max_loop_depth) +
                               " levels; fuse outer loops into the core split or make tiles larger");
        }
        Streams inner;
        trips.push_back(node.trip);
        emit_body(node.body, trips, inner, &exit);
        trips.pop_back();
        for (int u1 = 0; u1 < U; u1++) {
            for (int u2 = 0; u2 < U; u2++) {
                for (int k = 0; k < exit.carried(u1, u2); k++) out[u1].push_back(make(isa::Opcode::Signal, channel_of(u1, u2)));
            }
        }
        for (int u = 0; u < U; u++) {
            if (inner[u].empty()) continue;
            out[u].push_back(make(isa::Opcode::Loop, node.trip));
            out[u].insert(out[u].end(), inner[u].begin(), inner[u].end());
            out[u].push_back(isa::make_instruction(isa::Opcode::EndLoop, {}));
        }
    }

    const MachineDescription &m_;
};

}  // namespace

CoreStreams emit_core_streams(const std::vector<ProgramNode> &tree, const MachineDescription &m) {
    StreamEmitter e(m);
    StreamEmitter::Streams s;
    std::vector<int64_t> trips;
    e.emit_body(tree, trips, s);
    CoreStreams cs;
    for (int u = 0; u < U; u++) cs.unit[u] = std::move(s[u]);
    return cs;
}

}  // namespace compiler
}  // namespace spyre
