// spyre-as: assembles a Spyre program from its text form (syntax in
// spyre/assembler.h) into a .spyre binary.
//
//   spyre-as FILE.s [-o OUT.spyre]      default output: FILE with extension .spyre
//
// The program is built for the current machine description (built-in, or
// $SPYRE_MACHINE / $SPYRE_MACHINE_SET) and validated before it is written: the
// encoded bytes are decoded again and checked, so validation errors name file
// offsets of the output. Errors go to stderr with exit status 1. The source
// must be a regular file of at most 256 MiB (kMaxProgramFileBytes).
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "output_files.h"
#include "spyre/assembler.h"
#include "spyre/error.h"
#include "spyre/program_format.h"
#include "spyre/validator.h"

namespace {

// The assembly source; like a program file, at most kMaxProgramFileBytes and
// only a regular file.
std::string read_text_file(const std::string &path) {
    const std::vector<uint8_t> bytes = spyre::read_file_bytes(path, spyre::kMaxProgramFileBytes);
    return std::string(bytes.begin(), bytes.end());
}

}  // namespace

int main(int argc, char **argv) {
    check_stdout_at_exit("spyre-as");
    CLI::App app{"Assemble a Spyre program from text into a .spyre binary"};
    std::string input, output;
    app.add_option("FILE", input, "assembly source (.s)")->required();
    app.add_option("-o,--output", output, "output program (default: FILE with extension .spyre)");
    CLI11_PARSE(app, argc, argv);

    if (output.empty()) output = std::filesystem::path(input).replace_extension(".spyre").string();
    try {
        const spyre::MachineDescription &machine = spyre::default_machine();
        spyre::Program program = spyre::assemble_program(read_text_file(input), machine, input);
        std::vector<uint8_t> bytes = spyre::encode_program(program);
        try {
            spyre::validate_program(spyre::decode_program(bytes), machine);
        } catch (const spyre::Error &e) {
            throw spyre::Error(input + ": " + e.what());
        }
        spyre::write_file_bytes(output, bytes);
    } catch (const spyre::Error &e) {
        std::cerr << "spyre-as: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
