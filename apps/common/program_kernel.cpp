// One compiled Spyre program called like its AOT function (see program_kernel.h).
#include "program_kernel.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "HalideBuffer.h"
#include "spyre/program_format.h"
#include "spyre/spyre_runtime.h"

namespace spyre_apps {

namespace {

std::string read_text(const std::string &path) {
    std::ifstream f(path);
    if (!f) throw std::runtime_error("cannot read " + path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// The AOT function's arguments in order, from the declaration in its C header.
std::vector<std::pair<std::string, bool>> header_signature(const std::string &path, const std::string &name) {
    const std::string text = read_text(path);
    std::smatch m;
    if (!std::regex_search(text, m, std::regex("\\nint " + name + "\\(([^)]*)\\);"))) {
        throw std::runtime_error(path + ": no declaration of " + name + "()");
    }
    std::vector<std::pair<std::string, bool>> out;
    std::stringstream list(m[1].str());
    for (std::string decl; std::getline(list, decl, ',');) {
        std::smatch a;
        if (std::regex_search(decl, a, std::regex("\\*_(\\w+)_buffer\\s*$"))) {
            out.emplace_back(a[1].str(), true);
        } else if (std::regex_search(decl, a, std::regex("\\b_(\\w+)\\s*$"))) {
            out.emplace_back(a[1].str(), false);
        } else {
            throw std::runtime_error(path + ": cannot read the argument '" + decl + "' of " + name + "()");
        }
    }
    return out;
}

int index_of(const std::vector<std::pair<std::string, bool>> &sig, const std::string &name, bool buffer,
             const std::string &where) {
    for (size_t i = 0; i < sig.size(); i++) {
        if (sig[i].first == name && sig[i].second == buffer) return (int)i;
    }
    throw std::runtime_error(where + ": the program's " + (buffer ? "buffer '" : "parameter '") + name +
                             "' is not an argument of the function its header declares");
}

}  // namespace

ProgramKernel::ProgramKernel(const std::string &dir, const std::string &name)
    : name_(name), program_path_(dir + "/" + name + ".spyre") {
    signature_ = header_signature(dir + "/" + name + ".h", name);
    spyre::Program program;
    try {
        bytes_ = spyre::read_file_bytes(program_path_);
        program = spyre::decode_program(bytes_);
    } catch (const std::exception &e) {
        throw std::runtime_error(program_path_ + " is not a Spyre program: " + e.what());
    }
    for (const spyre::ProgramArgument &a : program.args) {
        if (a.kind == spyre::ArgKind::Temp) continue;
        table_.push_back(index_of(signature_, a.name, true, program_path_));
    }
    for (const spyre::ScalarParam &p : program.params) params_.push_back(index_of(signature_, p.name, false, program_path_));
    // Every argument of the function reaches the program: nothing the caller passes is dropped.
    for (size_t i = 0; i < signature_.size(); i++) {
        const auto &uses = signature_[i].second ? table_ : params_;
        if (std::find(uses.begin(), uses.end(), (int)i) == uses.end()) {
            throw std::runtime_error(program_path_ + ": the argument '" + signature_[i].first + "' of " + name_ +
                                     "() is not in the program's " + (signature_[i].second ? "argument table" : "parameters"));
        }
    }
}

int ProgramKernel::call(const std::vector<KernelArg> &args) const {
    if (args.size() != signature_.size()) {
        throw std::runtime_error(name_ + ": takes " + std::to_string(signature_.size()) + " arguments, got " +
                                 std::to_string(args.size()));
    }
    for (size_t i = 0; i < args.size(); i++) {
        if (args[i].is_buffer != signature_[i].second) {
            throw std::runtime_error(name_ + ": argument " + std::to_string(i + 1) + " '" + signature_[i].first +
                                     "' must be a " + (signature_[i].second ? "buffer" : "scalar"));
        }
    }
    std::vector<halide_buffer_t *> table;
    for (int i : table_) table.push_back(args[i].buffer);
    std::vector<double> params;
    for (int i : params_) params.push_back(args[i].scalar);
    Halide::Runtime::Buffer<uint8_t> program(const_cast<uint8_t *>(bytes_.data()), (int)bytes_.size());
    return spyre_run_program(nullptr, program.raw_buffer(), (int32_t)table.size(), table.data(), (int32_t)params.size(),
                             params.data());
}

}  // namespace spyre_apps
