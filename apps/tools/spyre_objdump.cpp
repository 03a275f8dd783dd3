// spyre-objdump: prints a .spyre program in the assembler's text syntax (see
// spyre/assembler.h); `spyre-as` reads the output back to the same bytes.
//
//   spyre-objdump PROGRAM [--no-validate]
//
// The program is decoded and, unless --no-validate is given, validated
// against the current machine description first. Errors are printed as
// "spyre-objdump: PROGRAM: <message>" with exit status 1. PROGRAM must be a
// regular file of at most 256 MiB (kMaxProgramFileBytes), checked before it
// is read.
#include <iostream>

#include <CLI/CLI.hpp>

#include "output_files.h"
#include "spyre/assembler.h"
#include "spyre/error.h"
#include "spyre/program_format.h"
#include "spyre/validator.h"

int main(int argc, char **argv) {
    check_stdout_at_exit("spyre-objdump");
    CLI::App app{"Print a Spyre program (.spyre) as assembly text"};
    std::string path;
    bool no_validate = false;
    app.add_option("PROGRAM", path, "program binary (.spyre)")->required();
    app.add_flag("--no-validate", no_validate, "print the program even if it fails validation");
    CLI11_PARSE(app, argc, argv);

    try {
        spyre::Program program = spyre::decode_program(spyre::read_file_bytes(path));
        if (!no_validate) spyre::validate_program(program, spyre::default_machine());
        std::cout << spyre::disassemble_program(program);
    } catch (const spyre::Error &e) {
        std::cerr << "spyre-objdump: " << path << ": " << e.what() << "\n";
        return 1;
    }
    return 0;
}
