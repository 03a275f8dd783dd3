#!/usr/bin/env bash
# Runs every Spyre generator command of the build (the kernels build.ninja generates) with the
# generators of two build trees and compares the programs byte for byte: how a change that must
# not change behaviour (a refactoring) is checked.
#   benchmarks/compare_generated_programs.sh OLD_BUILD_DIR [NEW_BUILD_DIR=build]
# Prints one line per program that differs and a summary; exits 1 if any differs or fails.
set -euo pipefail
old="${1:?usage: $0 OLD_BUILD_DIR [NEW_BUILD_DIR]}"
new="${2:-build}"
old="$(cd "$old" && pwd)"
new="$(cd "$new" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The Spyre commands of the build: "bin/gen_X -n NAME ... target=...spyre..." up to the next && or |.
grep -o 'bin/gen_[a-z0-9_]* -n [^&|]*' "$new/build.ninja" | grep 'target=[^ ]*spyre' | sort -u > "$work/commands"
total=0 differ=0 failed=0
while read -r gen args; do
  name="$(sed -n 's/.*-n \([^ ]*\) .*/\1/p' <<<" $args")"
  for side in old new; do
    dir="$work/$side/$name"
    mkdir -p "$dir"
    root="$old"; [ "$side" = new ] && root="$new"
    # The same arguments, the output directory replaced.
    # shellcheck disable=SC2086
    if ! "$root/$gen" $(sed "s| -o [^ ]*| -o $dir|" <<<" $args") > "$dir/log" 2>&1; then
      echo "FAILED ($side): $gen $args"; sed 's/^/  /' "$dir/log" | head -5
      failed=$((failed + 1))
    fi
  done
  total=$((total + 1))
  if ! cmp -s "$work/old/$name/$name.spyre" "$work/new/$name/$name.spyre"; then
    echo "DIFFERS: $name ($gen $args)"
    differ=$((differ + 1))
  fi
done < "$work/commands"
echo "compare_generated_programs: $total programs, $differ differ, $failed generator runs failed"
[ "$differ" -eq 0 ] && [ "$failed" -eq 0 ]
