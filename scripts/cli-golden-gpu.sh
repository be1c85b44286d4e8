#!/usr/bin/env bash
# Issue #25: the CLI's golden files on the GPU. Runs every row of the CLI's golden table
# (crates/cli/tests/golden/cli.txt: name, stream version, SHA-256, command line) with
# `--device gpu --out DIR/<name>.npy` (`.csv` for mg) and checks that the file hashes as the row
# (the CPU's hash, made by crates/cli/tests/golden_cli.rs) and that its .json sidecar names the
# GPU and the row's stream version or later. Every bridge row also runs in chunks
# (`--chunk-paths 97`, the GPU's ranges), which must hash the same.
#
# Usage: scripts/cli-golden-gpu.sh PATH/TO/lockstep [TABLE]
# Needs a GPU, bash, sha256sum, grep; no Rust. Exit status: the number of failures.
set -uo pipefail
bin=$(realpath "${1:?usage: scripts/cli-golden-gpu.sh PATH/TO/lockstep [TABLE]}")
table=${2:-$(dirname "$0")/../crates/cli/tests/golden/cli.txt}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" info | grep -E '^(GPU|loaded)' || { echo "cli-golden-gpu: no GPU" >&2; exit 1; }
failed=0
passed=0
check() { # name want stream file
  local got
  got=$(sha256sum "$4" | cut -d' ' -f1)
  if [[ $got != "$2" ]]; then
    echo "FAILED: $1: SHA-256 $got, the table says $2"; failed=$((failed + 1)); return
  fi
  if ! grep -q '"device": "gpu: ' "$4.json"; then
    echo "FAILED: $1: the sidecar does not name the GPU: $(cat "$4.json")"; failed=$((failed + 1)); return
  fi
  local stream
  stream=$(grep -o '"stream_version": [0-9]*' "$4.json" | grep -o '[0-9]*$')
  if (( stream < $3 )); then
    echo "FAILED: $1: the sidecar's stream $stream is older than the row's $3"; failed=$((failed + 1)); return
  fi
  echo "ok: $1"; passed=$((passed + 1))
}
while read -r name stream sha args; do
  [[ -z $name || $name == \#* ]] && continue
  ext=npy
  [[ $args == mg\ * ]] && ext=csv
  out="$dir/$name.$ext"
  # shellcheck disable=SC2086 # the command line is words
  if ! "$bin" $args --device gpu --out "$out" > "$dir/log" 2>&1; then
    echo "FAILED: $name: lockstep $args --device gpu"; cat "$dir/log"; failed=$((failed + 1)); continue
  fi
  check "$name" "$sha" "$stream" "$out"
  if [[ $args == bridge\ * ]]; then
    # shellcheck disable=SC2086
    if "$bin" $args --device gpu --chunk-paths 97 --out "$dir/chunked.$ext" > "$dir/log" 2>&1; then
      check "$name (chunks of 97 paths on the GPU)" "$sha" "$stream" "$dir/chunked.$ext"
    else
      echo "FAILED: $name in chunks"; cat "$dir/log"; failed=$((failed + 1))
    fi
  fi
done < "$table"
echo "cli-golden-gpu: $passed passed, $failed failed"
exit "$failed"
