#!/usr/bin/env bash
# Issue #25, part 3: a 10^9-path f32 Brownian bridge on the GPU written to a file, against the
# disk's own write bandwidth (dd with conv=fdatasync, the same bytes). The CLI streams --out in
# chunks and fsyncs the file before renaming it, so both figures include getting the bytes onto
# the disk; the GPU should not be the bound.
#
# Usage: scripts/bridge-throughput.sh PATH/TO/lockstep [DIR]
#   DIR      where the files go (default: ./bridge-throughput.tmp; must have room for the file)
#   PATHS    env, paths per run (default 1000000000)
#   STEPS    env, --steps (default 4: (N+1)·d = 4 rows, 16 GB of f32 at 10^9 paths)
#   SOURCES  env, --source values to time (default "sobol philox": both made in chunks on the
#            GPU by the fused kernels, which take the chunk's first path)
#   CHUNK_PATHS  env, --chunk-paths of the --out runs (default: the CLI's, 512 MiB of output)
# Needs a GPU, bash, dd, df, awk; no Rust. Removes what it writes.
set -euo pipefail
bin=$(realpath "${1:?usage: scripts/bridge-throughput.sh PATH/TO/lockstep [DIR]}")
dir=${2:-./bridge-throughput.tmp}
paths=${PATHS:-1000000000}
steps=${STEPS:-4}
sources=${SOURCES:-sobol philox}
chunk=()
if [[ -n ${CHUNK_PATHS:-} ]]; then chunk=(--chunk-paths "$CHUNK_PATHS"); fi
mkdir -p "$dir"
bytes=$(( paths * steps * 4 + 128 ))
free=$(df -P -B1 "$dir" | awk 'NR == 2 {print $4}')
echo "bridge-throughput: $("$bin" info | grep -E '^GPU' || echo 'GPU: none found')"
echo "bridge-throughput: $paths paths × $steps rows, f32: $bytes bytes per file; $free bytes free in $dir"
if (( free < bytes + (1 << 30) )); then
  echo "bridge-throughput: not enough room in $dir; give another DIR or lower PATHS/STEPS" >&2
  exit 1
fi
now() { date +%s.%N; }
rate() { awk -v b="$1" -v s="$2" 'BEGIN {printf "%.2f GB/s", b / s / 1e9}'; }

# The disk: the same number of bytes, written and flushed.
blocks=$(( (bytes + (64 << 20) - 1) / (64 << 20) ))
t0=$(now)
dd if=/dev/zero of="$dir/dd.tmp" bs=64M count="$blocks" conv=fdatasync status=none
t1=$(now)
rm -f "$dir/dd.tmp"
dd_secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
echo "bridge-throughput: disk: dd $(( blocks * (64 << 20) )) bytes with conv=fdatasync in ${dd_secs} s: $(rate $(( blocks * (64 << 20) )) "$dd_secs")"

for source in $sources; do
  # Generation alone (no --out: one piece, downloaded to the host, nothing written).
  t0=$(now)
  "$bin" bridge --device gpu --precision f32 --paths "$paths" --steps "$steps" --source "$source" \
    | sed 's/^/  /'
  t1=$(now)
  gen_secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
  echo "bridge-throughput: $source, no --out: ${gen_secs} s wall: $(rate "$bytes" "$gen_secs") of output"
  # Generation written to the disk.
  t0=$(now)
  "$bin" bridge --device gpu --precision f32 --paths "$paths" --steps "$steps" --source "$source" \
    --out "$dir/x.npy" ${chunk[@]+"${chunk[@]}"} | sed 's/^/  /'
  t1=$(now)
  out_secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
  size=$(stat -c %s "$dir/x.npy")
  echo "bridge-throughput: $source, --out: $size bytes in ${out_secs} s wall: $(rate "$size" "$out_secs") (disk: $(rate $(( blocks * (64 << 20) )) "$dd_secs"))"
  rm -f "$dir/x.npy" "$dir/x.npy.json" "$dir/x.npy.partial"
done
rmdir "$dir" 2>/dev/null || true
