#!/usr/bin/env bash
# What `spyre-info --json` prints, SPYRE_MACHINE loads back: the same fingerprint and the same
# value for every parameter (with an override in force, so a non-default value travels too).
#   spyre_info_round_trip.sh <spyre-info> <work-dir>
set -euo pipefail
info=$1
file=$2/info_round_trip.json
SPYRE_MACHINE_SET=cores=16 "$info" --json > "$file"
values() {  # the fingerprint line and "name value" of each parameter row
  awk '/^structural fingerprint/ {print} /^-/ {rows=1; next} rows && NF >= 2 {print $1, $2}'
}
expected=$(SPYRE_MACHINE_SET=cores=16 "$info" | values)
loaded=$(SPYRE_MACHINE="$file" "$info" | values)
if [ -z "$expected" ] || [ "$expected" != "$loaded" ]; then
  echo "spyre-info --json did not load back as SPYRE_MACHINE:"
  diff <(echo "$expected") <(echo "$loaded") || true
  exit 1
fi
echo "spyre-info --json loads back: $(echo "$loaded" | wc -l) lines agree"
