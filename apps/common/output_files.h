// The files the tools and apps write on request (llm --trace/--json, spyre-run --report/--trace/
// --svg/--output): checked before the run, so a path that cannot be written fails at once rather
// than after the whole run, and every write and the close checked, so a failed write is an error
// naming the path, never a silent success.
#pragma once

#include <string>

// Why `path` cannot be written ("" when it looks writable): a directory, a missing or
// unwritable parent directory, an existing file without write permission.
std::string output_path_problem(const std::string &path);

// Writes `text` to `path` (replacing it); throws std::runtime_error naming the path on any failure.
void write_text_file(const std::string &path, const std::string &text);

// Makes the process's standard output an output like the others: at exit it is flushed and
// checked, and a failed write (a full disk, /dev/full, a closed pipe's EIO) ends the process
// with status 1 and "PROGRAM: cannot write the standard output: REASON" on stderr instead of a
// silent success. Call once at the start of main.
void check_stdout_at_exit(const char *program);
