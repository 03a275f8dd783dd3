// Double buffering by unroll-by-two, renaming and load hoisting (see double_buffering.h).
#include "program_tree/double_buffering.h"

#include <algorithm>

#include "program_tree/loop_rewrites.h"
#include "program_tree/scratchpad_accesses.h"
#include "program_tree/tile_overlap_reuse.h"

namespace spyre {
namespace compiler {

namespace {

// What the pass needs beyond the tree: the machine's stick and SFU vector sizes
// and the arguments the core's program writes.
struct Context {
    int64_t stick_bytes = 0;
    int64_t max_sfu_lanes = 0;
    std::set<int64_t> written_args;
};

bool is_scratchpad_address(isa::Opcode op, int field) {
    return isa::opcode_spec(op).fields[field].kind == isa::FieldKind::SpAddr;
}

// Rewrites every operand for iteration 2*L' + copy of the loop at `level`,
// moving scratchpad addresses inside the ping-pong buffers to copy `copy`.
void rewrite(ProgramNode &n, int level, int copy, const std::vector<const PingPongBuffer *> &buffers) {
    if (n.kind == ProgramNode::Kind::Loop) {
        for (ProgramNode &c : n.body) rewrite(c, level, copy, buffers);
        return;
    }
    SymInstruction &in = n.inst;
    for (int f = 0; f < isa::opcode_spec(in.op).num_fields; f++) {
        SymOperand &o = in.f[f];
        const int64_t original = o.base;
        const int64_t c = o.coef_at(level);
        if (c != 0) o.set_coef(level, 2 * c);
        o.base += copy * c;
        if (copy == 1 && is_scratchpad_address(in.op, f)) {
            for (const PingPongBuffer *b : buffers) {
                if (original >= b->lo && original < b->hi) o.base += b->offset;
            }
        }
    }
}

bool references(const ProgramNode &n, const PingPongBuffer &b) {
    if (n.kind == ProgramNode::Kind::Loop) {
        for (const ProgramNode &c : n.body) {
            if (references(c, b)) return true;
        }
        return false;
    }
    for (int f = 0; f < isa::opcode_spec(n.inst.op).num_fields; f++) {
        if (is_scratchpad_address(n.inst.op, f) && n.inst.f[f].base >= b.lo && n.inst.f[f].base < b.hi) return true;
    }
    return false;
}

// Whether [lo, hi) lies in either copy of b.
bool in_either_copy(int64_t lo, int64_t hi, const PingPongBuffer &b) {
    return (lo >= b.lo && hi <= b.hi) || (lo >= b.lo + b.offset && hi <= b.hi + b.offset);
}

bool computes_ahead(const std::vector<const PingPongBuffer *> &mine) {
    for (const PingPongBuffer *b : mine) {
        if (b->computed_ahead) return true;
    }
    return false;
}

// What an item writes, for compute_one_iteration_ahead: something besides buffers computed ahead
// and temporaries; only temporaries of its SFU expression (written and read within one
// statement); or buffers computed ahead (and perhaps temporaries).
enum class AheadWrites { Other, TemporariesOnly, Ahead };

AheadWrites ahead_writes(const ProgramNode &n, const std::vector<const PingPongBuffer *> &mine, std::vector<int64_t> &trips) {
    if (n.kind == ProgramNode::Kind::Loop) {
        trips.push_back(n.trip);
        AheadWrites w = n.body.empty() ? AheadWrites::Other : AheadWrites::TemporariesOnly;
        for (const ProgramNode &c : n.body) {
            const AheadWrites cw = ahead_writes(c, mine, trips);
            if (cw == AheadWrites::Other) w = AheadWrites::Other;
            if (cw == AheadWrites::Ahead && w != AheadWrites::Other) w = AheadWrites::Ahead;
        }
        trips.pop_back();
        return w;
    }
    if (n.inst.op == isa::Opcode::DmaLoad || n.inst.op == isa::Opcode::DmaStore) return AheadWrites::Other;
    AheadWrites w = AheadWrites::Other;
    for (const ScratchpadAccess &a : node_accesses(n, trips)) {
        if (!a.write) continue;
        bool ahead = false, temporary = false;
        for (const PingPongBuffer *b : mine) ahead = ahead || (b->computed_ahead && in_either_copy(a.lo, a.hi, *b));
        for (int f = 0; f < isa::opcode_spec(n.inst.op).num_fields; f++) {
            const SymOperand &o = n.inst.f[f];
            temporary = temporary || (o.temporary && is_scratchpad_address(n.inst.op, f) && o.base >= a.lo && o.base < a.hi);
        }
        if (!ahead && !temporary) return AheadWrites::Other;
        if (ahead) w = AheadWrites::Ahead;
        if (temporary && w == AheadWrites::Other) w = AheadWrites::TemporariesOnly;
    }
    return w;
}

bool is_dma_load(const ProgramNode &n) {
    return n.kind == ProgramNode::Kind::Instruction && n.inst.op == isa::Opcode::DmaLoad;
}

bool is_staging_load(const ProgramNode &n, const std::vector<const PingPongBuffer *> &mine) {
    if (!is_dma_load(n)) return false;
    const int64_t sp = n.inst.f[isa::field::DmaLoad::sp].base;
    for (const PingPongBuffer *b : mine) {
        if ((sp >= b->lo && sp < b->hi) || (sp >= b->lo + b->offset && sp < b->hi + b->offset)) return true;
    }
    return false;
}

// The tile producers among a copy of the loop body: the DMA loads into either copy of the loop's
// ping-pong buffers, and the items (instructions, or loops of them) that compute a buffer
// computed ahead (compute_one_iteration_ahead): those writing only such buffers and their own
// temporaries, and those writing only temporaries that the next reader of is one of them (the
// first instructions of a producer's SFU expression). `trips`: the loops around the body.
std::vector<bool> tile_producers(const std::vector<ProgramNode> &body, const std::vector<const PingPongBuffer *> &mine,
                                 std::vector<int64_t> &trips) {
    std::vector<bool> producer(body.size(), false);
    std::vector<AheadWrites> writes(body.size(), AheadWrites::Other);
    for (size_t i = 0; i < body.size(); i++) {
        producer[i] = is_staging_load(body[i], mine);
        if (computes_ahead(mine)) writes[i] = ahead_writes(body[i], mine, trips);
    }
    for (size_t i = body.size(); i-- > 0;) {
        if (writes[i] == AheadWrites::Ahead) producer[i] = true;
        if (writes[i] != AheadWrites::TemporariesOnly) continue;
        std::vector<ScratchpadAccess> written;
        for (const ScratchpadAccess &a : node_accesses(body[i], trips)) {
            if (a.write) written.push_back(a);
        }
        for (size_t j = i + 1; j < body.size(); j++) {
            if (accesses_conflict(written, node_accesses(body[j], trips))) {
                producer[i] = producer[j];
                break;
            }
        }
    }
    return producer;
}

// A loop of the body that is not a tile producer but holds a staging load or writes a buffer
// computed ahead: the pair cannot be pipelined.
bool has_nested_tile_producer(const ProgramNode &n, bool producer, const std::vector<const PingPongBuffer *> &mine,
                              std::vector<int64_t> &trips) {
    if (n.kind != ProgramNode::Kind::Loop || producer) return false;
    for (const ScratchpadAccess &a : node_accesses(n, trips)) {
        if (!a.write) continue;
        for (const PingPongBuffer *b : mine) {
            const bool overlaps = (a.lo < b->hi && b->lo < a.hi) || (a.lo < b->hi + b->offset && b->lo + b->offset < a.hi);
            if (b->computed_ahead && overlaps) return true;
        }
    }
    trips.push_back(n.trip);
    bool found = false;
    for (const ProgramNode &c : n.body) found = found || is_staging_load(c, mine) || has_nested_tile_producer(c, false, mine, trips);
    trips.pop_back();
    return found;
}

// Consecutive tiles that overlap in DRAM (a stencil's input rows) take the
// overlap from the other copy (tile_overlap_reuse.h): copy 1's tile from copy
// 0's, copy 0's next tile from copy 1's; each copy is inserted just before the
// load it shrinks. loads0[k], loads1[k] and next0[k] are the same staging load
// in iterations 2p, 2p + 1 and 2p + 2. Only where nothing but the staging
// loads writes the buffer and the program never writes the tensor, so the
// other copy holds exactly the previous tile when a load runs.
void reuse_tile_overlaps(const std::vector<ProgramNode> &loads0, std::vector<ProgramNode> &loads1,
                         std::vector<ProgramNode> &next0, const std::vector<ProgramNode> &rest0,
                         const std::vector<ProgramNode> &rest1, const std::vector<const PingPongBuffer *> &mine,
                         const std::vector<int64_t> &trips, const Context &ctx) {
    if (loads0.size() != loads1.size() || loads0.size() != next0.size()) return;
    std::vector<ProgramNode> new1, new0;
    for (size_t k = 0; k < loads0.size(); k++) {
        if (loads0[k].inst.op != isa::Opcode::DmaLoad) {  // a computed tile's producer
            new1.push_back(loads1[k]);
            new0.push_back(next0[k]);
            continue;
        }
        const ProgramNode original1 = loads1[k];
        ProgramNode l1 = loads1[k], l0 = next0[k];
        const SymInstruction &in = loads0[k].inst;
        const PingPongBuffer *buffer = nullptr;
        const int64_t sp = in.f[isa::field::DmaLoad::sp].base;
        for (const PingPongBuffer *b : mine) {
            if (sp >= b->lo && sp < b->hi) buffer = b;
        }
        // (Not a buffer in one copy, computed ahead: there is no other copy to take the overlap from.)
        bool private_buffer = buffer != nullptr && buffer->offset != 0 && !ctx.written_args.count(in.f[isa::field::DmaLoad::arg].base);
        auto writes_buffer = [&](const ProgramNode &item) {
            for (const ScratchpadAccess &a : node_accesses(item, trips)) {
                if (!a.write) continue;
                for (int64_t off : {(int64_t)0, buffer->offset}) {
                    if (a.lo < buffer->hi + off && buffer->lo + off < a.hi) return true;
                }
            }
            return false;
        };
        for (const auto *part : {&rest0, &rest1}) {
            for (const ProgramNode &item : *part) private_buffer = private_buffer && !writes_buffer(item);
        }
        for (size_t j = 0; j < loads0.size(); j++) {
            if (j != k) private_buffer = private_buffer && !writes_buffer(loads0[j]) && !writes_buffer(loads1[j]);
        }
        ProgramNode copy;
        if (private_buffer && reuse_tile_overlap(l1, loads0[k], ctx.stick_bytes, ctx.max_sfu_lanes, &copy)) {
            new1.push_back(std::move(copy));
        }
        new1.push_back(std::move(l1));
        if (private_buffer && reuse_tile_overlap(l0, original1, ctx.stick_bytes, ctx.max_sfu_lanes, &copy)) {
            new0.push_back(std::move(copy));
        }
        new0.push_back(std::move(l0));
    }
    loads1 = std::move(new1);
    next0 = std::move(new0);
}

// The software pipeline of an unrolled pair (copies 0 and 1 of the body, each
// split into its staging loads and the rest), for an even trip count 2h:
//   before the loop:  loads0(0)
//   loop p < h-1:     loads1(p), rest0(p), loads0(p+1), rest1(p)
//   after the loop:   loads1(h-1), rest0(h-1), rest1(h-1)
// and for an odd trip count 2h + 1 (the last iteration on copy 0, whose tile
// the loop's last loads0(p+1) brings):
//   before the loop:  loads0(0)
//   loop p < h:       loads1(p), rest0(p), loads0(p+1), rest1(p)
//   after the loop:   rest0(h)
// so each copy's next tile is loaded while the other copy is computed, and
// the DMA never waits for both computes of a pair (the plain unrolled body
// loads0, loads1, rest0, rest1 would, through its loop-carried tokens).
// Returns false (and leaves `nodes` alone) when the body does not allow it:
// staging loads inside nested loops, double-buffered loops nested inside, or a
// scratchpad or DRAM conflict between a moved load and what it moves across.
bool pipeline_pair(std::vector<ProgramNode> &nodes, size_t index, int depth, std::vector<int64_t> &trips,
                   const std::vector<ProgramNode> &first, const std::vector<ProgramNode> &second,
                   const std::vector<const PingPongBuffer *> &mine, const std::vector<PingPongBuffer> &buffers,
                   const Context &ctx) {
    const ProgramNode &loop = nodes[index];
    for (const PingPongBuffer &b : buffers) {
        if (b.level > depth && references(loop, b)) return false;
    }
    std::vector<ProgramNode> loads0, rest0, loads1, rest1;
    // A load may move ahead of an item only if they touch no common scratchpad or DRAM bytes
    // (one writing): the new order is the program order synchronization preserves.
    const bool odd = loop.trip % 2 != 0;
    // The pair loop's index p covers the pairs, and with an odd trip count the last iteration too.
    trips.push_back((loop.trip + 1) / 2);
    auto independent = [&](const ProgramNode &load, const ProgramNode &item) {
        return !accesses_conflict(node_accesses(load, trips), node_accesses(item, trips)) &&
               !dram_conflict(load, item, trips);
    };
    // Within each copy the loads move to its front, ahead of the items before them.
    for (const auto *copy : {&first, &second}) {
        auto &loads = copy == &first ? loads0 : loads1;
        auto &rest = copy == &first ? rest0 : rest1;
        const std::vector<bool> producer = tile_producers(*copy, mine, trips);
        for (size_t i = 0; i < copy->size(); i++) {
            const ProgramNode &c = (*copy)[i];
            if (has_nested_tile_producer(c, producer[i], mine, trips)) return trips.pop_back(), false;
            if (!producer[i]) {
                rest.push_back(c);
                continue;
            }
            for (const ProgramNode &r : rest) {
                if (!independent(c, r)) return trips.pop_back(), false;
            }
            loads.push_back(c);
        }
    }
    const int64_t half = loop.trip / 2;
    std::vector<ProgramNode> next0 = loads0;
    for (ProgramNode &c : next0) shift_iteration(c, (size_t)depth);
    // Copy 1's loads move ahead of copy 0's compute, copy 0's next loads ahead of copy 1's.
    for (const ProgramNode &l : loads1) {
        for (const ProgramNode &r : rest0) {
            if (!independent(l, r)) return trips.pop_back(), false;
        }
    }
    for (const ProgramNode &l : next0) {
        for (const ProgramNode &r : rest1) {
            if (!independent(l, r)) return trips.pop_back(), false;
        }
    }
    reuse_tile_overlaps(loads0, loads1, next0, rest0, rest1, mine, trips, ctx);
    // Copy 0's compute and its next tile. With a buffer computed ahead, the next tile's loads
    // move up through the compute where independent (keeping their order among the loads):
    // its producers follow this copy's matmuls on their unit and need their operands first,
    // not after this copy's trailing store in the DMA queue.
    std::vector<ProgramNode> middle = rest0;
    middle.insert(middle.end(), next0.begin(), next0.end());
    if (computes_ahead(mine)) {
        for (size_t i = rest0.size(); i < middle.size(); i++) {
            if (!is_dma_load(middle[i])) continue;
            size_t to = i;
            while (to > 0 && !is_dma_load(middle[to - 1]) && independent(middle[i], middle[to - 1])) {
                to--;
            }
            std::rotate(middle.begin() + (std::ptrdiff_t)to, middle.begin() + (std::ptrdiff_t)i,
                        middle.begin() + (std::ptrdiff_t)i + 1);
        }
    }
    // With a buffer computed ahead, copy 1's trailing stores also wait for the next pair's first
    // loads (the pipelined pairs after the first take them after their copy 1 loads): in the DMA
    // queue they would hold up the tile the next pair's producers compute first.
    const int64_t pipelined_pairs = odd ? half : half - 1;
    std::vector<ProgramNode> rest1_kept = rest1, deferred;
    if (computes_ahead(mine) && pipelined_pairs >= 1) {
        while (!rest1_kept.empty() && rest1_kept.back().kind == ProgramNode::Kind::Instruction &&
               rest1_kept.back().inst.op == isa::Opcode::DmaStore) {
            deferred.insert(deferred.begin(), rest1_kept.back());
            rest1_kept.pop_back();
        }
        bool independent_of_next_loads = true;
        for (ProgramNode l : loads1) {
            shift_iteration(l, (size_t)depth);
            for (const ProgramNode &t : deferred) independent_of_next_loads = independent_of_next_loads && independent(l, t);
        }
        if (!independent_of_next_loads) {
            deferred.clear();
            rest1_kept = rest1;
        }
    }
    trips.pop_back();

    std::vector<ProgramNode> replacement;
    for (ProgramNode c : loads0) {
        substitute_level(c, (size_t)depth, 0);
        c.prologue_load = true;
        replacement.push_back(std::move(c));
    }
    // The parts' items at pair p of the loop, each in its place.
    auto append_at = [&](std::initializer_list<std::vector<ProgramNode> *> parts, int64_t p) {
        for (auto *part : parts) {
            for (ProgramNode c : *part) {
                substitute_level(c, (size_t)depth, p);
                replacement.push_back(std::move(c));
            }
        }
    };
    if (deferred.empty()) {
        if (pipelined_pairs == 1) {
            // One pair: inline, so synchronization sees each item (a loop of one trip would hand
            // its last tokens to the epilogue only after the whole loop).
            append_at({&loads1, &middle, &rest1}, 0);
        } else if (pipelined_pairs > 1) {
            ProgramNode body = loop;
            body.trip = pipelined_pairs;
            body.pipelined = true;
            body.body.clear();
            for (auto *part : {&loads1, &middle, &rest1}) body.body.insert(body.body.end(), part->begin(), part->end());
            replacement.push_back(std::move(body));
        }
    } else {
        // Pair 0 without its trailing stores; then each pair p >= 1 takes pair p - 1's after its loads.
        append_at({&loads1, &middle, &rest1_kept}, 0);
        if (pipelined_pairs == 2) {
            append_at({&loads1}, 1);
            append_at({&deferred}, 0);
            append_at({&middle, &rest1_kept}, 1);
        } else if (pipelined_pairs > 2) {
            ProgramNode body = loop;
            body.trip = pipelined_pairs - 1;
            body.pipelined = true;
            body.body.clear();
            for (auto *part : {&loads1, &deferred, &middle, &rest1_kept}) {
                for (ProgramNode c : *part) {
                    if (part != &deferred) shift_iteration(c, (size_t)depth);  // pair p = the loop's index + 1
                    body.body.push_back(std::move(c));
                }
            }
            replacement.push_back(std::move(body));
        }
    }
    // The epilogue; the last pipelined pair's deferred stores after its first loads.
    if (odd) {
        append_at({&deferred}, pipelined_pairs - 1);
        append_at({&rest0}, half);
    } else {
        append_at({&loads1}, half - 1);
        append_at({&deferred}, pipelined_pairs - 1);
        append_at({&rest0, &rest1}, half - 1);
    }
    nodes.erase(nodes.begin() + (std::ptrdiff_t)index);
    nodes.insert(nodes.begin() + (std::ptrdiff_t)index, replacement.begin(), replacement.end());
    if (computes_ahead(mine)) {
        // The first tile (its loads and the producers computed ahead) moves up through what
        // comes before the loop where independent (in order): the loop's first compute then
        // waits only for what it reads, not for every load before it in the DMA queue
        // (attention's Q tile and scores ahead of the V that only P.V reads).
        // Then the second tile's DMA loads (pair 0's copy 1, inline right after them) move up
        // the same way, below the first tile's: the next query tile's load no longer waits in
        // the DMA queue behind a resident V's load or ring transfer that only the first P.V
        // reads (its scores are computed ahead, before that P.V). Its compute stays: moved
        // above other work of its unit it would only delay that work (a state's initialization
        // behind the next step's softmax: d=64 s=1024 tile=64, 75.0 -> 75.3 us). Not done for a
        // loop of two trips (no pipelined pair), whose copy 1 loads also follow the first
        // tile's; and load_sinking.h may still move such a load down to its reader when what it
        // passed holds a loop of loads (it is not a prologue load).
        size_t highest = 0;  // the first tile's items keep their order, and the second's loads
        const bool second_inline = !deferred.empty() || pipelined_pairs == 1;
        const size_t hoisted = loads0.size() + (second_inline ? loads1.size() : 0);
        for (size_t k = 0; k < hoisted; k++) {
            const bool second = k >= loads0.size();
            size_t at = index + k;
            if (second && !is_dma_load(nodes[at])) continue;
            while (at > highest && !accesses_conflict(node_accesses(nodes[at], trips), node_accesses(nodes[at - 1], trips)) &&
                   !dram_conflict(nodes[at], nodes[at - 1], trips)) {
                std::swap(nodes[at], nodes[at - 1]);
                at--;
            }
            highest = at + 1;
        }
    }
    return true;
}

void transform(std::vector<ProgramNode> &nodes, int depth, std::vector<int64_t> &trips,
               const std::vector<PingPongBuffer> &buffers, const Context &ctx) {
    for (size_t i = 0; i < nodes.size(); i++) {
        ProgramNode &n = nodes[i];
        if (n.kind != ProgramNode::Kind::Loop) continue;
        std::vector<const PingPongBuffer *> mine;
        for (const PingPongBuffer &b : buffers) {
            // Matched by loop identity: after a loop ends its copies' addresses may be reused
            // by other buffers of a sibling loop, which must not be renamed.
            if (b.level == depth && b.loop_id == n.loop_id && references(n, b)) mine.push_back(&b);
        }
        if (!mine.empty() && n.trip >= 2) {
            std::vector<ProgramNode> first = n.body, second = n.body;
            for (ProgramNode &c : first) rewrite(c, depth, 0, mine);
            for (ProgramNode &c : second) rewrite(c, depth, 1, mine);
            const size_t before = nodes.size();
            if (pipeline_pair(nodes, i, depth, trips, first, second, mine, buffers, ctx)) {
                i += nodes.size() - before;  // skip the prologue, loop and epilogue just built
                continue;
            }
            if (n.trip % 2 == 0) {
                // The fallback: the unrolled pair in one loop body, the second copy's loads hoisted.
                n.trip /= 2;
                n.body = std::move(first);
                const size_t half = n.body.size();
                n.body.insert(n.body.end(), second.begin(), second.end());
                trips.push_back(n.trip);
                hoist_loads(n.body, half, trips);
                trips.pop_back();
            }
        }
        trips.push_back(n.trip);
        transform(n.body, depth + 1, trips, buffers, ctx);
        trips.pop_back();
    }
}

}  // namespace

void apply_double_buffering(std::vector<ProgramNode> &tree, const std::vector<PingPongBuffer> &buffers,
                            int64_t stick_bytes, int64_t max_sfu_lanes) {
    if (buffers.empty()) return;
    Context ctx;
    ctx.stick_bytes = stick_bytes;
    ctx.max_sfu_lanes = max_sfu_lanes;
    collect_stored_args(tree, ctx.written_args);
    std::vector<int64_t> trips;
    transform(tree, 0, trips, buffers, ctx);
}

}  // namespace compiler
}  // namespace spyre
