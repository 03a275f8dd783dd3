#!/bin/sh
# Runs a command-line tool on a bad input and checks that it fails cleanly:
# the exit status is EXPECTED_RC (1 for the tools' errors; an abort would be
# 134, a hang is stopped after 60 s, SPYRE_TOOL_TEST_TIMEOUT_S in sanitizer builds) and stderr
# contains EXPECTED_TEXT.
# The tool gets at most SPYRE_TOOL_TEST_ADDRESS_SPACE_KB of address space
# (2 GB, set by tests/tools/CMakeLists.txt), so reading an unbounded input into
# memory fails the test instead of the machine. Sanitizer builds leave it unset:
# ASan and TSan reserve terabytes of address space for their shadow memory.
#
#   expect_tool_error.sh EXPECTED_RC EXPECTED_TEXT COMMAND [ARGS...]
set -u
expected_rc=$1
expected_text=$2
shift 2
limit=${SPYRE_TOOL_TEST_ADDRESS_SPACE_KB:-unlimited}
err=$( (ulimit -v "$limit"; timeout "${SPYRE_TOOL_TEST_TIMEOUT_S:-60}" "$@") 2>&1 >/dev/null)
rc=$?
echo "command: $*"
echo "exit status: $rc"
echo "stderr: $err"
if [ "$rc" -ne "$expected_rc" ]; then
  echo "FAIL: expected exit status $expected_rc"
  exit 1
fi
case "$err" in
  *"$expected_text"*) echo "PASS" ;;
  *) echo "FAIL: stderr does not contain: $expected_text"; exit 1 ;;
esac
