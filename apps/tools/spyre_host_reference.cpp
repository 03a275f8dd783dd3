// spyre-host-reference: the host build of a suite generator run on exactly
// the inputs `spyre-run PROGRAM --seed N` gives the Spyre program, so the
// autoscheduling experiments compare every compiled schedule with the host.
//
//   spyre-host-reference PROGRAM.spyre HEADER.h -g GENERATOR [name=value]...
//                        [--seed N] [--param NAME=VALUE]... --output NAME=FILE.npy...
//
// PROGRAM gives the inputs (names, true extents and dtypes, in argument order:
// each is filled by fill_random with seed N, N+1, ... as spyre-run does).
// HEADER is the generator's C header from the same build (-e c_header): its
// function signature gives the generator's inputs in declaration order, the
// order Halide's set_inputs takes them. The generator is built in-process (JIT)
// for host_reference_target() with the given GeneratorParams and realized
// over the outputs' true extents.
//
// Assumes the generator's buffer inputs are named like the program arguments
// and its scalar inputs are given with --param.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "output_files.h"
#include "Halide.h"
#include "spyre/error.h"
#include "spyre/host_run.h"
#include "spyre/npy.h"
#include "spyre/program_format.h"
#include "spyre_target.h"

namespace {

using namespace spyre;

// Halide 14 keeps configure/build protected; the pointer-to-member idiom reaches them.
struct GeneratorSteps : Halide::Internal::GeneratorBase {
    static void configure(Halide::Internal::GeneratorBase *g) { (g->*(&GeneratorSteps::call_configure))(); }
    static Halide::Pipeline build(Halide::Internal::GeneratorBase *g) { return (g->*(&GeneratorSteps::build_pipeline))(); }
};

[[noreturn]] void fail(const std::string &what) { throw Error(what); }

// The parameter names of `function` in `header`, in order, without Halide's
// decoration (`struct halide_buffer_t *_A_buffer` -> A, `float _eps` -> eps).
std::vector<std::string> declared_arguments(const std::string &header, const std::string &function) {
    std::ifstream f(header);
    if (!f) fail("cannot open the header '" + header + "'");
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string text = ss.str();
    const std::regex proto("int " + function + "\\(([^)]*)\\)");
    std::smatch m;
    if (!std::regex_search(text, m, proto)) fail("no declaration of " + function + "(...) in '" + header + "'");
    std::vector<std::string> names;
    std::stringstream params(m[1].str());
    for (std::string p; std::getline(params, p, ',');) {
        std::smatch n;
        if (!std::regex_search(p, n, std::regex("_([A-Za-z0-9_]+?)(_buffer)?\\s*$"))) fail("cannot read the parameter '" + p + "'");
        names.push_back(n[1].str());
    }
    return names;
}

Halide::Type halide_type(DType t) {
    switch (t) {
    case DType::F32: return Halide::Float(32);
    case DType::F16: return Halide::Float(16);
    case DType::I32: return Halide::Int(32);
    case DType::I8: return Halide::Int(8);
    default: fail(std::string("no Halide type for dtype ") + dtype_name(t));
    }
}

Halide::Buffer<> to_buffer(const HostTensor &t) {
    std::vector<int> extents(t.shape.extent.begin(), t.shape.extent.end());
    Halide::Buffer<> b(halide_type(t.shape.dtype), extents, t.name);
    std::memcpy(b.data(), t.data.data(), t.data.size());
    return b;
}

// One generator input: a buffer, or a scalar (Input<float>).
struct InputValue {
    Halide::Buffer<> buffer;
    float scalar = 0;
    bool is_buffer = true;
};

// Halide's set_inputs takes each input with its own C++ type, so the list is
// unrolled at compile time (up to 5 inputs: 2^5 instantiations).
template <typename... Done>
void set_inputs(Halide::Internal::GeneratorBase *g, const std::vector<InputValue> &in, const Done &...done) {
    constexpr size_t i = sizeof...(Done);
    if (i == in.size()) {
        g->set_inputs(done...);
        return;
    }
    if constexpr (i < 5) {
        if (in[i].is_buffer) set_inputs(g, in, done..., in[i].buffer);
        else set_inputs(g, in, done..., in[i].scalar);
    } else {
        fail("generators with more than 5 inputs are not supported");
    }
}

int run(int argc, char **argv) {
    if (argc < 5) {
        std::fprintf(stderr,
                     "usage: spyre-host-reference PROGRAM.spyre HEADER.h -g GENERATOR [name=value]... [--seed N] "
                     "[--param NAME=VALUE]... --output NAME=FILE.npy...\n");
        return 2;
    }
    const std::string program_path = argv[1], header = argv[2];
    std::string generator;
    uint64_t seed = 1;
    std::map<std::string, std::string> params, scalars, outputs;
    for (int i = 3; i < argc; i++) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) fail(a + " needs a value");
            return argv[++i];
        };
        auto pair = [&](const std::string &v, std::map<std::string, std::string> &into) {
            const size_t eq = v.find('=');
            if (eq == std::string::npos) fail(a + " takes NAME=VALUE, not '" + v + "'");
            into[v.substr(0, eq)] = v.substr(eq + 1);
        };
        if (a == "-g") generator = value();
        else if (a == "--seed") seed = std::stoull(value());
        else if (a == "--param") pair(value(), scalars);
        else if (a == "--output") pair(value(), outputs);
        else if (a.find('=') != std::string::npos) pair(a, params);
        else fail("unknown argument '" + a + "'");
    }
    if (generator.empty()) fail("-g GENERATOR is required");
    // Every output path is checked before the host build runs (output_files.h).
    for (const auto &[name, path] : outputs) {
        const std::string why = output_path_problem(path);
        if (!why.empty()) fail("--output " + name + "=" + path + ": cannot write it: " + why);
    }

    const Program p = decode_program(read_file_bytes(program_path));
    std::map<std::string, HostTensor> inputs;
    std::map<std::string, TensorShape> output_shapes;
    uint64_t s = seed;
    for (const ProgramArgument &a : p.args) {
        if (a.kind == ArgKind::Input) {
            HostTensor t = HostTensor::zeros(a.name, a.shape);
            fill_random(t, s++);  // as spyre-run does
            inputs.emplace(a.name, std::move(t));
        } else if (a.kind == ArgKind::Output) {
            output_shapes[a.name] = a.shape;
        }
    }

    spyre::set_compiling_for_spyre(false);
    const Halide::Target target = spyre::host_reference_target();
    auto gen = Halide::Internal::GeneratorRegistry::create(generator, Halide::GeneratorContext(target));
    Halide::Internal::GeneratorParamsMap pm;
    for (const auto &kv : params) pm[kv.first] = kv.second;
    gen->set_generator_param_values(pm);
    GeneratorSteps::configure(gen.get());

    std::vector<InputValue> ordered;
    for (const std::string &name : declared_arguments(header, p.kernel_name)) {
        if (output_shapes.count(name)) continue;
        if (auto it = inputs.find(name); it != inputs.end()) {
            ordered.push_back(InputValue{to_buffer(it->second), 0, true});
        } else if (auto sc = scalars.find(name); sc != scalars.end()) {
            ordered.push_back(InputValue{Halide::Buffer<>(), std::stof(sc->second), false});
        } else {
            fail("the generator's input '" + name + "' is neither a program input nor given with --param");
        }
    }
    set_inputs(gen.get(), ordered);
    Halide::Pipeline pipeline = GeneratorSteps::build(gen.get());

    if (output_shapes.size() != 1) fail("only generators with one output are supported");
    const auto &[out_name, shape] = *output_shapes.begin();
    std::vector<int> extents(shape.extent.begin(), shape.extent.end());
    Halide::Buffer<> out(halide_type(shape.dtype), extents);
    pipeline.realize(Halide::Realization({out}), target);

    for (const auto &[name, path] : outputs) {
        if (name != out_name) fail("--output names '" + name + "', which is not the program's output");
        NpyArray a;
        a.dtype = shape.dtype;
        a.shape.assign(shape.extent.rbegin(), shape.extent.rend());
        a.data.assign((const uint8_t *)out.data(), (const uint8_t *)out.data() + out.size_in_bytes());
        write_npy(path, a);
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    check_stdout_at_exit("spyre-host-reference");
    try {
        return run(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "spyre-host-reference: %s\n", e.what());
        return 1;
    }
}
