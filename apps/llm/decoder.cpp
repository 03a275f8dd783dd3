// The decoder chain (decoder.h), kernel by kernel. T tokens of one step, B
// sequences, D head dim, QH/KVH query/KV heads, G = QH / KVH.
//
// Prefill of sequence b (T = prompt tokens, positions 0..T-1):
//   x(H, T)          <- embedding rows                         device copies
//   per layer:
//     qkv = rmsnorm(x) . wqkv  (NQKV, T) viewed as (D, QH+2KVH, T); on the device as
//                       scale = 1/rms(x) (p_rms), qkv = scale * (x . g wqkv), the norm's
//                       weight g folded into wqkv at load (the host chain runs the norm)
//     qk = rope(qkv)    (D, QH+KVH, T): the query and key heads rotated, laid out on
//                       the device heads outermost (heads_outermost), so
//     q(D, T, QH)      <- qk heads [0, QH), tokens and heads swapped    a crop, read in place
//     k(D, T, KVH)     <- qk heads [QH, QH+KVH), swapped                a crop, read in place
//     kt = transpose(k) (T, D, KVH)
//     v(D, T, KVH)     <- qkv heads [QH+KVH, QH+2KVH), swapped         copy
//     cache: Kt[0:T, :, heads of b] <- kt;  V[:, 0:T, heads of b] <- v  copies
//     o = attention(q, kt, v), causal, kv_heads = KVH  (D, T, QH): query head h
//                    reads KV head h / G, so K and V are not repeated per query head
//     a(D, QH, T)      <- o, swapped back; viewed as (H, T)             copy
//     x = x + a . wo;  x = x + swiglu(rmsnorm(x) . wgu) . wdown   (the adds fused into the matmuls)
//   the last token's x -> rmsnorm -> LM head (batch-1 decode kernels) -> argmax on the host
//
// Decode step (T = B, one token per sequence, position p):
//   x(H, B) <- embedding rows; per layer:
//     xn, qkv, qk as above (T = B)
//     q(D, QH, B) <- qk heads [0, QH), viewed as (D, G, KVH*B): the G query
//                    heads of KV head kvh of sequence b are the rows of attention head kvh + KVH*b
//     k(D, KVH, B) <- qk heads [QH, ...) viewed (D, 1, KVH*B); kt = transpose(k) (1, D, KVH*B)
//     Kt[p, :, :] <- kt;  V[:, p, :] <- qkv heads [QH+KVH, ...)         copies (the append)
//     o = attention(q, Kt, V, key_mask), the mask 0 for positions <= p, -30000 after
//     (D, G, KVH*B) is (H, B): x = x + o . wo (fused); MLP as above
//   rmsnorm -> LM head -> logits (V, B) -> argmax per sequence on the host
#include "decoder.h"

#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>

#include "kernel_table.h"
#include "tensor_parallel.h"
#include "spyre/dtype.h"
#include "spyre/spyre_device.h"
#include "spyre/spyre_runtime.h"

namespace llm {

namespace {

const std::vector<KernelEntry> kKernels = {LLM_KERNEL_ENTRIES};  // linked into this executable

// The device layout kernel `k` was compiled with for its argument `arg` (its
// program file: the cache's, or the one the build wrote next to a linked kernel). False if missing.
bool program_layout(const KernelEntry &k, const char *arg, spyre_device_layout *out) {
    const std::string path = k.program ? k.program->program_path() : std::string(LLM_PROGRAM_DIR) + "/" + k.function + ".spyre";
    return spyre_program_argument_layout(path.c_str(), arg, out) == 0;
}

spyre_kernel_stats profile_entry(const char *name) {
    spyre_kernel_stats s{};
    if (spyre_get_kernel_stats(name, &s) != 0) s = spyre_kernel_stats{};
    return s;
}

}  // namespace

const ModelShape &compiled_shape() {
    static const ModelShape shape = [] {
        ModelShape s;
        s.name = LLM_CONFIG_NAME;
        s.hidden = LLM_HIDDEN;
        s.qheads = LLM_QHEADS;
        s.kvheads = LLM_KVHEADS;
        s.head_dim = LLM_HEAD_DIM;
        s.ffn = LLM_FFN;
        s.vocab = LLM_VOCAB;
        s.layers = LLM_LAYERS;
        s.prompt = LLM_PROMPT;
        s.capacity = LLM_CAPACITY;
        s.batches = LLM_BATCHES;
        s.vocab_total = s.vocab;
        return s;
    }();
    return shape;
}

const std::vector<KernelEntry> &compiled_kernels() { return kKernels; }

int64_t ModelShape::layer_weight_bytes() const {
    const int64_t h = hidden;
    return 2 * (2 * h + (int64_t)qkv_features() * h + h * attention_width() + 2 * (int64_t)ffn * h + h * (int64_t)ffn);
}

int64_t ModelShape::weight_bytes_per_step(int layers, int batch) const {
    return layers * layer_weight_bytes() + 2 * ((int64_t)hidden + (int64_t)vocab * hidden + (int64_t)batch * hidden);
}

Decoder::Decoder(const Realization &realization, const ModelShape &shape, int layers, int batch,
                 RunRecorder *recorder, std::vector<KernelEntry> kernels, spyre_comm_t *comm)
    : r_(realization), shape_(shape), kernels_(std::move(kernels)), comm_(comm), layers_(layers), batch_(batch),
      recorder_(recorder) {
    if (shape.tp > 1 && (!comm || !realization.on_device())) {
        throw std::logic_error("a tensor-parallel shard runs on the device with its ranks' communicator");
    }
    bool known = false;
    for (int b : shape.batches) known |= b == batch;
    if (!known) {
        std::string list;
        for (int b : shape.batches) list += (list.empty() ? "" : ", ") + std::to_string(b);
        throw std::runtime_error("batch " + std::to_string(batch) + " has no kernels in configuration " + shape.name +
                                 " (built for batches " + list + "; add it to BATCHES in apps/llm/CMakeLists.txt)");
    }
}

const KernelEntry &Decoder::kernel(const std::string &role) const {
    for (const KernelEntry &k : kernels_) {
        if (role == k.role) return k;
    }
    throw std::runtime_error("configuration " + shape_.name + " has no kernel '" + role + "'");
}

template <typename... Args>
void Decoder::run(const std::string &kernel_role, const std::string &label, Args... args) {
    const KernelEntry &k = kernel(kernel_role);
    const KernelFn &fn = r_.on_device() ? k.spyre : k.host;
    const spyre_kernel_stats relayout_before = r_.on_device() ? profile_entry("relayout") : spyre_kernel_stats{};
    if (k.program && r_.on_device()) {
        r_.check(k.program->call({spyre_apps::KernelArg(args)...}), label + " (" + k.function + ")");
    } else {
        r_.check(fn.call(k.function + (r_.on_device() ? "" : "_host"), args...), label + " (" + k.function + ")");
    }
    if (!recorder_ || !r_.on_device()) return;
    recorder_->kernel_ran(label, k.function);
    const spyre_kernel_stats relayout_after = profile_entry("relayout");
    if (relayout_after.calls > relayout_before.calls) {
        // The runtime re-laid out an operand for this kernel: shown, not hidden in the kernel's row.
        OpRecord rr;
        rr.role = "relayout:" + label;
        rr.function = "relayout";
        rr.us = relayout_after.simulated_us - relayout_before.simulated_us;
        rr.bound_us = rr.us;
        rr.read_bytes = relayout_after.dram_read_bytes - relayout_before.dram_read_bytes;
        rr.write_bytes = relayout_after.dram_write_bytes - relayout_before.dram_write_bytes;
        rr.bottleneck = "dma";
        recorder_->add(rr);
    }
}

void Decoder::copies(const std::string &label, const std::function<void()> &op) {
    if (recorder_ && r_.on_device()) {
        recorder_->device_copies(label, op);
    } else {
        op();
    }
}

Tensor Decoder::place_weight(const Tensor *host, const std::vector<int> &extents, const std::string &kernel_role,
                             const char *arg) {
    if (!r_.on_device()) return *host;  // the host chain reads the host weights themselves
    // Device memory only: the values are written into it from the host piece, which
    // the caller then drops (a weight lives once, on the device).
    Tensor t(kF16, nullptr, extents);
    spyre_device_layout layout;
    if (!kernel_role.empty() && program_layout(kernel(kernel_role), arg, &layout)) {
        r_.check(spyre_device_malloc_with_layout(nullptr, t.raw_buffer(), &layout), "weight device_malloc");
    } else {
        r_.check(t.device_malloc(spyre_device_interface()), "weight device_malloc");
    }
    if (host && !r_.timing_only()) {
        bool same = host->dimensions() == t.dimensions();
        for (int d = 0; same && d < t.dimensions(); d++) same = host->dim(d).extent() == t.dim(d).extent();
        if (!same) throw std::logic_error("a weight's host piece does not have the extents it is placed with");
        r_.check(spyre_device_write_values(nullptr, t.raw_buffer(), host->data()), "weight upload");
    }
    return t;
}

Decoder::Weight Decoder::place(const Tensor *host, const std::vector<int> &extents, const std::string &kernel,
                              const char *arg) {
    return place_for(host, extents, "d" + std::to_string(batch_) + "_" + kernel, "p_" + kernel, arg);
}

Decoder::Weight Decoder::place_for(const Tensor *host, const std::vector<int> &extents, const std::string &decode_role,
                                  const std::string &prefill_role, const char *arg) {
    // The decode kernels' layout first (decode streams every weight every
    // step); a prefill kernel compiled with another layout gets its own copy,
    // placed once here, rather than a relayout of the weight on every call.
    Weight w;
    w.decode = place_weight(host, extents, decode_role, arg);
    w.prefill = w.decode;
    if (!r_.on_device()) return w;
    spyre_device_layout dl{}, pl{};
    const bool has_d = program_layout(this->kernel(decode_role), arg, &dl);
    const bool has_p = has_role(prefill_role) && program_layout(this->kernel(prefill_role), arg, &pl);
    bool same = !has_p || (has_d && dl.dimensions == pl.dimensions && dl.stick_dim == pl.stick_dim);
    for (int d = 0; same && d < dl.dimensions; d++) same = dl.order[d] == pl.order[d] && dl.padded[d] == pl.padded[d];
    if (!same) {
        w.prefill = place_weight(host, extents, prefill_role, arg);
        int64_t elements = 1;
        for (int e : extents) elements *= e;
        second_copy_bytes_ += 2 * elements;
    }
    return w;
}

bool Decoder::has_role(const std::string &role) const {
    for (const KernelEntry &k : kernels_) {
        if (role == k.role) return true;
    }
    return false;
}

void Decoder::load_weights(const WeightSource *source) {
    if (!source && !r_.timing_only()) throw std::logic_error("a functional run needs weights");
    const ModelShape &s = shape_;
    const std::string d = "d" + std::to_string(batch_) + "_";
    layer_.clear();
    second_copy_bytes_ = 0;
    const bool progress = r_.on_device() && layers_ > 4 && s.rank == 0;  // rank 0 speaks for the job
    for (int l = 0; l < layers_; l++) {
        LayerWeights piece;  // this layer's host copy, dropped at the end of the iteration on the device
        if (source) piece = source->layer(l);
        if (source && folds_attention_norm()) {
            // Folded into copies: a source may hand out the tensors it holds (HeldWeights,
            // which the host chain of --check reads unfolded).
            piece.attn_norm = piece.attn_norm.copy();
            piece.wqkv = piece.wqkv.copy();
            fold_norm_into_projection(&piece.attn_norm, &piece.wqkv);
        }
        const LayerWeights *hw = source ? &piece : nullptr;
        LayerState st;
        st.attn_norm = place(hw ? &hw->attn_norm : nullptr, {s.hidden}, "norm", "weight");
        st.wqkv = place(hw ? &hw->wqkv : nullptr, {s.qkv_features(), s.hidden}, "qkv", "B");
        st.wo = place(hw ? &hw->wo : nullptr, {s.hidden, s.attention_width()}, "oproj", "B");
        st.mlp_norm = place(hw ? &hw->mlp_norm : nullptr, {s.hidden}, "norm", "weight");
        st.wgu = place(hw ? &hw->wgu : nullptr, {2 * s.ffn, s.hidden}, "gu", "B");
        st.wdown = place(hw ? &hw->wdown : nullptr, {s.hidden, s.ffn}, "down", "B");
        st.kt_cache = tensor_for(d + "attn", "Kt", {s.capacity, s.head_dim, s.kvheads * batch_});
        st.v_cache = tensor_for(d + "attn", "V", {s.head_dim, s.capacity, s.kvheads * batch_});
        layer_.push_back(std::move(st));
        if (progress) std::fprintf(stderr, "\rweights: layer %d/%d placed", l + 1, layers_);
    }
    if (progress) std::fprintf(stderr, "\n");
    OuterWeights outer;
    if (source) outer = source->outer();
    const OuterWeights *host = source ? &outer : nullptr;
    embedding_ = place_weight(host ? &host->embedding : nullptr, {s.hidden, s.vocab_total}, "", nullptr);  // read by copies only
    // The prefill's last token goes through the batch-1 LM head.
    final_norm_ = place_for(host ? &host->final_norm : nullptr, {s.hidden}, d + "norm", "d1_norm", "weight");
    lm_head_ = place_for(host ? &host->lm_head : nullptr, {s.vocab, s.hidden}, d + "lm", "d1_lm", "B");
    auto zeros = [&](const std::string &kernel, int n) {
        Tensor z(kF16, n);
        std::memset(z.data(), 0, z.size_in_bytes());
        return place(&z, {n}, kernel, "bias");
    };
    bias_qkv_ = zeros("qkv", s.qkv_features());
    bias_hidden_ = zeros("oproj", s.hidden);
    bias_down_ = zeros("down", s.hidden);
    bias_gu_ = zeros("gu", 2 * s.ffn);
    Tensor zv(kF16, s.vocab);
    std::memset(zv.data(), 0, zv.size_in_bytes());
    bias_vocab_ = place_for(&zv, {s.vocab}, d + "lm", "d1_lm", "bias");
}

// ---- helpers of one step ----

// The placement of a weight the kernels of prefix k ("p_" or "dB_") read.
Tensor &Decoder::W(Weight &w, const std::string &k) { return k == "p_" ? w.prefill : w.decode; }

// A new tensor in the device layout `kernel_role`'s program has for its
// argument `arg`: a kernel writes such an output in place (another layout
// would make the runtime give the output a new allocation, which views of
// the old one would not see) and reads such an input without a relayout.
Tensor Decoder::tensor_for(const std::string &kernel_role, const char *arg, const std::vector<int> &extents,
                           bool host_memory, halide_type_t type) {
    if (!r_.on_device()) return r_.make(extents, false, type);
    const std::string key = kernel_role + "/" + arg;
    auto it = layouts_.find(key);
    if (it == layouts_.end()) {
        spyre_device_layout layout{};
        const bool found = program_layout(kernel(kernel_role), arg, &layout);
        it = layouts_.emplace(key, std::make_pair(found, layout)).first;
    }
    if (!it->second.first) return r_.make(extents, host_memory, type);
    Tensor t = host_memory && !r_.timing_only() ? Tensor(type, extents) : Tensor(type, nullptr, extents);
    r_.check(spyre_device_malloc_with_layout(nullptr, t.raw_buffer(), &it->second.second),
             "device_malloc in the layout of " + key);
    return t;
}

// `t` seen with other extents, for reading: the chain only takes views of
// tensors already written (a kernel output is allocated in its own rank and
// layout, tensor_for), because a view that cannot alias t's bytes is a copy.
Tensor Decoder::view(Tensor &t, const std::vector<int> &extents) {
    Tensor v;
    try {
        v = r_.reshape(t, extents);
    } catch (const std::runtime_error &e) {
        if (!r_.on_device()) throw;
        if (std::getenv("LLM_PROBE")) std::fprintf(stderr, "view copied instead: %s\n", e.what());
        // The tensor's device layout (a kernel's output layout) pads a dimension the
        // view would merge: the bytes differ, so the elements are copied (charged, shown).
        std::vector<int> own;
        for (int d = 0; d < t.dimensions(); d++) own.push_back(t.dim(d).extent());
        Tensor dense = r_.make(own);
        copies("relayout for a view", [&] { r_.copy(t, dense); });
        keep_alive_.push_back(dense);
        v = r_.reshape(dense, extents);
    }
    if (r_.on_device()) views_.push_back(v);
    return v;
}

namespace {

bool same_layout(const spyre_device_layout &a, const spyre_device_layout &b) {
    if (a.dimensions != b.dimensions || a.stick_dim != b.stick_dim) return false;
    for (int d = 0; d < a.dimensions; d++) {
        if (a.order[d] != b.order[d] || a.padded[d] != b.padded[d]) return false;
    }
    return true;
}

}  // namespace

// `region` of a device tensor as kernel `kernel_role`'s input `arg`: the region itself (at
// min 0, as kernels take their arguments) when its bytes are one run in that argument's
// layout (spyre_device_region_layout: a crop of the outermost dimension of a tensor laid out
// like it), which the runtime reads in place; otherwise (the host chain, another layout, a
// strided region) a copy into a tensor of the argument's layout, shown as `copy_label`.
Tensor Decoder::kernel_input(Tensor region, const std::string &kernel_role, const char *arg, const std::string &copy_label) {
    if (r_.on_device()) {
        spyre_device_layout have{}, want{};
        if (program_layout(kernel(kernel_role), arg, &want) && spyre_device_region_layout(region.raw_buffer(), &have) == 0 &&
            same_layout(have, want)) {
            for (int d = 0; d < region.dimensions(); d++) region.raw_buffer()->dim[d].min = 0;
            return region;
        }
    }
    std::vector<int> extents;
    for (int d = 0; d < region.dimensions(); d++) extents.push_back(region.dim(d).extent());
    Tensor own = tensor_for(kernel_role, arg, extents);
    copies(copy_label, [&] { r_.copy(region, own); });
    return own;
}

void Decoder::release_views() {
    // A copied Buffer takes ownership of a device handle it was given (Halide's
    // Buffer::incref), so dropping the last copy frees each view.
    views_.clear();
    keep_alive_.clear();
}

Tensor Decoder::upload(const std::string &label, const Tensor &host) {
    const spyre_kernel_stats before = r_.on_device() ? profile_entry("host->device") : spyre_kernel_stats{};
    Tensor t = r_.make_from_host(host);
    if (recorder_ && r_.on_device()) {
        const spyre_kernel_stats after = profile_entry("host->device");
        OpRecord rec;
        rec.role = label;
        rec.function = "host->device";
        rec.us = after.simulated_us - before.simulated_us;
        rec.bound_us = rec.us;
        rec.write_bytes = after.dram_write_bytes - before.dram_write_bytes;
        rec.bottleneck = "host link";
        recorder_->add(rec);
    }
    return t;
}

Tensor Decoder::rope_table(const std::vector<int> &positions, bool sine) {
    const int half = shape_.head_dim / 2;
    Tensor t(kF16, half, (int)positions.size());
    uint16_t *p = static_cast<uint16_t *>(t.data());
    for (size_t j = 0; j < positions.size(); j++) {
        for (int i = 0; i < half; i++) {
            const double freq = std::pow(shape_.rope_theta, -2.0 * i / shape_.head_dim);
            const double angle = positions[j] * freq;
            p[j * half + i] = spyre::float_to_half((float)(sine ? std::sin(angle) : std::cos(angle)));
        }
    }
    return upload(sine ? "rope sin table" : "rope cos table", t);
}

Tensor Decoder::embed(const std::vector<int> &tokens) {
    Tensor x = r_.make({shape_.hidden, (int)tokens.size()});
    copies("embedding", [&] {
        for (size_t i = 0; i < tokens.size(); i++) {
            const int token = tokens[i] < 0 ? 0 : tokens[i];  // timing-only runs have no tokens
            if (token >= shape_.vocab_total) throw std::runtime_error("token " + std::to_string(token) + " is not in the vocabulary");
            r_.copy(embedding_.cropped(1, token, 1), x.cropped(1, (int)i, 1));
        }
    });
    return x;
}

std::vector<int> Decoder::greedy(Tensor &logits) {
    const int n = logits.dim(1).extent();
    if (r_.timing_only()) return std::vector<int>(n, -1);
    const spyre_kernel_stats before = r_.on_device() ? profile_entry("device->host") : spyre_kernel_stats{};
    r_.to_host(logits);
    if (recorder_ && r_.on_device()) {
        const spyre_kernel_stats after = profile_entry("device->host");
        OpRecord rec;
        rec.role = "logits to host";
        rec.function = "device->host";
        rec.us = after.simulated_us - before.simulated_us;
        rec.bound_us = rec.us;
        rec.read_bytes = after.dram_read_bytes - before.dram_read_bytes;
        rec.bottleneck = "host link";
        recorder_->add(rec);
    }
    const auto start = std::chrono::steady_clock::now();
    std::vector<int> next(n);
    for (int b = 0; b < n; b++) {
        int best = 0;
        float best_value = -INFINITY;
        for (int v = 0; v < shape_.vocab_total; v++) {  // not the padding rows of the last rank's slice
            const float value = f16_at(logits, {v, b});
            if (value > best_value) best_value = value, best = v;
        }
        next[b] = best;
    }
    host_argmax_us_ += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    return next;
}

// LLM_PROBE=1 (functional runs): prints the mean |value| of the chain's
// intermediate tensors, to locate where two realizations part. Costs
// device->host copies, so never on by default.
void Decoder::probe(const char *what, const Tensor &t) {
    static const bool on = std::getenv("LLM_PROBE") && *std::getenv("LLM_PROBE") == '1';
    if (!on || r_.timing_only()) return;
    std::vector<int> extents;
    for (int d = 0; d < t.dimensions(); d++) extents.push_back(t.dim(d).extent());
    Tensor h = r_.make(extents, true);
    r_.copy(t, h);
    if (r_.on_device()) h.set_device_dirty();  // copy() marks its own Buffer copy of h
    r_.to_host(h);
    double sum = 0;
    const uint16_t *p = static_cast<const uint16_t *>(h.data());
    for (size_t i = 0; i < h.number_of_elements(); i++) sum += std::fabs(spyre::half_to_float(p[i]));
    std::fprintf(stderr, "probe %s %-14s mean|x| %.6f over %zu\n", r_.name(), what, sum / h.number_of_elements(),
                 h.number_of_elements());
}

// ---- the sub-blocks ----

// x2 = x + a . wo on one card; row-parallel over the ranks: rank 0 adds the residual, then the all-reduce.
void Decoder::o_projection(const std::string &k, Tensor &wo, Tensor &bias, Tensor &a, Tensor &x, Tensor &x2) {
    if (shape_.adds_residual()) {
        run(k + "oproj", "o proj + residual", a.raw_buffer(), wo.raw_buffer(), bias.raw_buffer(), x.raw_buffer(),
            x2.raw_buffer());
    } else {
        run(k + "oproj", "o proj + residual", a.raw_buffer(), wo.raw_buffer(), bias.raw_buffer(), x2.raw_buffer());
    }
    all_reduce("all-reduce (o proj)", x2);
}

void Decoder::all_reduce(const std::string &label, Tensor &x) {
    if (shape_.tp == 1) return;
    r_.check(all_reduce_sum(comm_, x.raw_buffer()), label);
    record_collective(label);
}

// The last collective's link time and this rank's wait for the slowest rank, as rows of the run's table.
void Decoder::record_collective(const std::string &label) {
    spyre_collective_stats c{};
    if (!recorder_ || spyre_get_last_collective_stats(&c) != 0) return;
    OpRecord rec;
    rec.role = label;
    rec.function = c.collective;
    rec.us = c.link_us;
    rec.bound_us = c.link_us;
    rec.read_bytes = c.bytes;
    rec.bottleneck = std::string("card link, ") + c.algorithm;
    recorder_->add(rec);
    if (c.wait_us > 0) {
        OpRecord wait;
        wait.role = "collective wait";
        wait.function = "collective wait";
        wait.us = c.wait_us;
        wait.bottleneck = "slowest rank";
        recorder_->add(wait);
    }
}

// x + swiglu(rmsnorm(x) . wgu) . wdown, with the kernels of prefix ("p_" or "dB_").
Tensor Decoder::mlp(const std::string &k, LayerState &L, Tensor &x) {
    const ModelShape &s = shape_;
    const int T = x.dim(1).extent();
    Tensor xn = tensor_for(k + "norm", "out", {s.hidden, T});
    run(k + "norm", "rmsnorm", x.raw_buffer(), W(L.mlp_norm, k).raw_buffer(), s.eps, xn.raw_buffer());
    // wgu's gate and up rows alternate in blocks of kSwigluWeightBlock. Prefill runs the
    // gate and up projections as one matmul whose epilogue is the SwiGLU gate (gen_matmul
    // activation=swiglu); decode runs the product, then gen_elementwise's swiglu over its
    // blocks (gate_up_blocks=true; kernel_plan.cpp says why).
    Tensor act;
    if (!has_role(k + "swiglu")) {
        act = tensor_for(k + "gu", "C", {s.ffn, T});
        run(k + "gu", "gate/up proj + swiglu", xn.raw_buffer(), W(L.wgu, k).raw_buffer(), W(bias_gu_, k).raw_buffer(),
            act.raw_buffer());
    } else {
        const int B = kSwigluWeightBlock;
        Tensor gu = tensor_for(k + "gu", "C", {2 * s.ffn, T});
        run(k + "gu", "gate/up proj", xn.raw_buffer(), W(L.wgu, k).raw_buffer(), W(bias_gu_, k).raw_buffer(), gu.raw_buffer());
        Tensor act3 = tensor_for(k + "swiglu", "out", {B, s.ffn / B, T});
        Tensor gu3 = view(gu, {2 * s.ffn, T, 1});
        run(k + "swiglu", "swiglu", gu3.raw_buffer(), act3.raw_buffer());
        act = view(act3, {s.ffn, T});
    }
    // The residual add is the down projection's epilogue (gen_matmul residual=true): x + act . wdown.
    Tensor out = tensor_for(k + "down", "C", {s.hidden, T});
    if (s.adds_residual()) {
        run(k + "down", "down proj + residual", act.raw_buffer(), W(L.wdown, k).raw_buffer(),
            W(bias_down_, k).raw_buffer(), x.raw_buffer(), out.raw_buffer());
    } else {  // row-parallel: rank 0 adds the residual, the all-reduce sums the partial products
        run(k + "down", "down proj + residual", act.raw_buffer(), W(L.wdown, k).raw_buffer(),
            W(bias_down_, k).raw_buffer(), out.raw_buffer());
    }
    all_reduce("all-reduce (down proj)", out);
    return out;
}

// rmsnorm(x) . wqkv, then the rotation of the query and key heads. Returns
// qkv viewed (D, QH + 2 KVH, T) and sets *qk to the rotated (D, QH + KVH, T).
Tensor Decoder::qkv_and_rope(const std::string &k, LayerState &L, Tensor &x, Tensor &cos, Tensor &sin, Tensor *qk) {
    const ModelShape &s = shape_;
    const int T = x.dim(1).extent();
    Tensor qkv = tensor_for(k + "qkv", "C", {s.qkv_features(), T});
    if (k == "p_" && folds_attention_norm()) {
        // The norm folded into the projection: its weight is in wqkv's columns (load_weights),
        // its 1/rms per token the projection's row scale, so the normalized x is never written.
        Tensor scale = tensor_for("p_rms", "out", {T}, false, halide_type_t(halide_type_float, 32));
        run("p_rms", "rmsnorm statistics", x.raw_buffer(), s.eps, scale.raw_buffer());
        run(k + "qkv", "qkv proj", x.raw_buffer(), W(L.wqkv, k).raw_buffer(), W(bias_qkv_, k).raw_buffer(),
            scale.raw_buffer(), qkv.raw_buffer());
    } else {
        // The norm itself: decode (with a unit weight where the device folds it into wqkv), and
        // the host chain's prefill, whose p_qkv (row_scale=true) then scales by ones.
        Tensor xn = tensor_for(k + "norm", "out", {s.hidden, T});
        run(k + "norm", "rmsnorm", x.raw_buffer(), W(L.attn_norm, k).raw_buffer(), s.eps, xn.raw_buffer());
        if (k == "p_" && has_role("p_rms")) {
            Tensor ones = r_.make({T}, true, halide_type_t(halide_type_float, 32));
            for (int t = 0; t < T; t++) static_cast<float *>(ones.data())[t] = 1.0f;
            run(k + "qkv", "qkv proj", xn.raw_buffer(), W(L.wqkv, k).raw_buffer(), W(bias_qkv_, k).raw_buffer(),
                ones.raw_buffer(), qkv.raw_buffer());
        } else {
            run(k + "qkv", "qkv proj", xn.raw_buffer(), W(L.wqkv, k).raw_buffer(), W(bias_qkv_, k).raw_buffer(),
                qkv.raw_buffer());
        }
    }
    Tensor qkv3 = view(qkv, {s.head_dim, s.qkv_heads(), T});
    *qk = tensor_for(k + "rope", "out", {s.head_dim, s.qheads + s.kvheads, T});
    run(k + "rope", "rope", qkv3.raw_buffer(), cos.raw_buffer(), sin.raw_buffer(), qk->raw_buffer());
    return qkv3;
}

Tensor Decoder::lm_head(Tensor &x) {
    // The batch's own kernels (decode), or the batch-1 ones for the last prompt token.
    const ModelShape &s = shape_;
    const int T = x.dim(1).extent();
    const std::string k = "d" + std::to_string(T) + "_";
    if (recorder_) recorder_->set_layer(-1);
    Tensor xn = tensor_for(k + "norm", "out", {s.hidden, T});
    const bool batch_kernels = T == batch_;
    Tensor &norm = batch_kernels ? final_norm_.decode : final_norm_.prefill;
    Tensor &lm = batch_kernels ? lm_head_.decode : lm_head_.prefill;
    Tensor &bias = batch_kernels ? bias_vocab_.decode : bias_vocab_.prefill;
    run(k + "norm", "final rmsnorm", x.raw_buffer(), norm.raw_buffer(), s.eps, xn.raw_buffer());
    Tensor logits = tensor_for(k + "lm", "C", {s.vocab, T}, s.tp == 1);
    run(k + "lm", "lm head", xn.raw_buffer(), lm.raw_buffer(), bias.raw_buffer(), logits.raw_buffer());
    if (s.tp == 1) return logits;
    // Split by vocabulary: every rank gathers every slice (counted as a collective), then argmaxes on its host.
    Tensor all = r_.make({s.vocab * s.tp, T}, true);
    r_.check(all_gather(comm_, logits.raw_buffer(), all.raw_buffer(), 0), "all-gather (logits)");
    record_collective("all-gather (logits)");
    return all;
}

int Decoder::prefill(int slot, const std::vector<int> &prompt) {
    const ModelShape &s = shape_;
    const int T = s.prompt, D = s.head_dim, QH = s.qheads, KVH = s.kvheads;
    if ((int)prompt.size() != T) {
        throw std::runtime_error("prefill: the prompt has " + std::to_string(prompt.size()) + " tokens; configuration " +
                                 s.name + " is built for " + std::to_string(T));
    }
    if (slot < 0 || slot >= batch_) throw std::runtime_error("prefill: no sequence slot " + std::to_string(slot));
    if (recorder_) recorder_->set_layer(-1);
    Tensor x = embed(prompt);
    std::vector<int> positions(T);
    for (int i = 0; i < T; i++) positions[i] = i;
    Tensor cos = rope_table(positions, false), sin = rope_table(positions, true);
    for (int l = 0; l < layers_; l++) {
        if (recorder_) recorder_->set_layer(l);
        LayerState &L = layer_[l];
        Tensor qk;
        Tensor qkv3 = qkv_and_rope("p_", L, x, cos, sin, &qk);
        // p_rope lays qk out heads outermost: qk as (D, T, heads) cropped to the query heads is
        // attention's Q, to the key heads the key transpose's input, each read in place.
        Tensor qk_heads = qk.transposed(1, 2);
        Tensor q = kernel_input(qk_heads.cropped(2, 0, QH), "p_attn", "Q", "qkv split");
        Tensor k = kernel_input(qk_heads.cropped(2, QH, KVH), "p_kt", "in", "qkv split");
        Tensor v = tensor_for("p_attn", "V", {D, T, KVH});
        copies("qkv split", [&] { r_.copy(qkv3.cropped(1, QH + KVH, KVH), v.transposed(1, 2)); });
        Tensor kt = tensor_for("p_kt", "out", {T, D, KVH});
        run("p_kt", "k transpose", k.raw_buffer(), kt.raw_buffer());
        copies("kv cache write", [&] {
            r_.copy(kt, L.kt_cache.cropped(0, 0, T).cropped(2, KVH * slot, KVH));
            r_.copy(v, L.v_cache.cropped(1, 0, T).cropped(2, KVH * slot, KVH));
        });
        // Grouped-query attention: p_attn (kv_heads = KVH) reads KV head h / G for query head h,
        // so it takes K and V as they are, with no per-query-head repeat (the runtime re-lays
        // them out, shown as a relayout row, only if a configuration pads them differently).
        // p_attn writes O token-major on the device (o_token_major): O transposed to (d, heads,
        // tokens) is the o projection's (d x heads, tokens) input as it is, a view, not a copy.
        Tensor o = tensor_for("p_attn", "O", {D, T, QH});
        run("p_attn", "attention", q.raw_buffer(), kt.raw_buffer(), v.raw_buffer(), o.raw_buffer());
        Tensor o_tokens = o.transposed(1, 2);
        Tensor a2 = view(o_tokens, {s.attention_width(), T});
        Tensor x2 = tensor_for("p_oproj", "C", {s.hidden, T});
        o_projection("p_", L.wo.prefill, bias_hidden_.prefill, a2, x, x2);
        x = mlp("p_", L, x2);
        release_views();
    }
    if (recorder_) recorder_->set_layer(-1);
    Tensor last = r_.make({s.hidden, 1});
    copies("last token", [&] { r_.copy(x.cropped(1, T - 1, 1), last); });
    logits_ = lm_head(last);
    const int next = greedy(logits_)[0];
    release_views();
    return next;
}

std::vector<int> Decoder::decode_step(const std::vector<int> &tokens, int position) {
    const ModelShape &s = shape_;
    const int B = batch_, D = s.head_dim, QH = s.qheads, KVH = s.kvheads, G = s.group();
    if ((int)tokens.size() != B) throw std::runtime_error("decode_step: one token per sequence is needed");
    if (position < 0 || position >= s.capacity) {
        throw std::runtime_error("decode_step: position " + std::to_string(position) + " is outside the KV cache (" +
                                 std::to_string(s.capacity) + " positions in configuration " + s.name + ")");
    }
    const std::string k = "d" + std::to_string(B) + "_";
    if (recorder_) recorder_->set_layer(-1);
    Tensor x = embed(tokens);
    Tensor cos = rope_table(std::vector<int>(B, position), false), sin = rope_table(std::vector<int>(B, position), true);
    Tensor mask_host(kF16, s.capacity);
    for (int j = 0; j < s.capacity; j++) {
        static_cast<uint16_t *>(mask_host.data())[j] = spyre::float_to_half(j <= position ? 0.0f : -30000.0f);
    }
    Tensor mask = upload("key mask", mask_host);
    for (int l = 0; l < layers_; l++) {
        if (recorder_) recorder_->set_layer(l);
        LayerState &L = layer_[l];
        probe("x", x);
        Tensor qk;
        Tensor qkv3 = qkv_and_rope(k, L, x, cos, sin, &qk);
        probe("qkv", qkv3);
        probe("qk", qk);
        Tensor q = r_.make({D, QH, B}), kn = r_.make({D, KVH, B}), vn = r_.make({D, KVH, B});
        copies("qkv split", [&] {
            r_.copy(qk.cropped(1, 0, QH), q);
            r_.copy(qk.cropped(1, QH, KVH), kn);
            r_.copy(qkv3.cropped(1, QH + KVH, KVH), vn);
        });
        Tensor kn3 = view(kn, {D, 1, KVH * B});
        Tensor ktn = tensor_for(k + "kt", "out", {1, D, KVH * B});
        run(k + "kt", "k transpose", kn3.raw_buffer(), ktn.raw_buffer());
        Tensor vn3 = view(vn, {D, 1, KVH * B});
        copies("kv append", [&] {
            r_.copy(ktn, L.kt_cache.cropped(0, position, 1));
            r_.copy(vn3, L.v_cache.cropped(1, position, 1));
        });
        Tensor qv = view(q, {D, G, KVH * B});
        Tensor o = tensor_for(k + "attn", "O", {D, G, KVH * B});
        run(k + "attn", "attention", qv.raw_buffer(), L.kt_cache.raw_buffer(), L.v_cache.raw_buffer(),
            mask.raw_buffer(), o.raw_buffer());
        probe("q", q);
        probe("kt cache", L.kt_cache);
        probe("v cache", L.v_cache);
        probe("attention", o);
        Tensor o2 = view(o, {s.attention_width(), B});
        Tensor x2 = tensor_for(k + "oproj", "C", {s.hidden, B});
        o_projection(k, L.wo.decode, bias_hidden_.decode, o2, x, x2);
        probe("after attention", x2);
        x = mlp(k, L, x2);
        probe("after mlp", x);
        release_views();
    }
    logits_ = lm_head(x);
    probe("logits", logits_);
    std::vector<int> next = greedy(logits_);
    release_views();
    return next;
}

}  // namespace llm
