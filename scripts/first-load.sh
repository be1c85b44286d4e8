#!/usr/bin/env bash
# The first start of lockstep on a GPU with an empty driver cache (a fresh node, container or CI
# runner): `lockstep info` with CUDA_CACHE_DISABLE=1, five runs for each module choice, the
# median wall time and the median of the decode + cuModuleLoadData time it reports.
# Usage: scripts/first-load.sh PATH/TO/lockstep [runs]
set -euo pipefail
bin=${1:?usage: scripts/first-load.sh PATH/TO/lockstep [runs]}
runs=${2:-5}
for choice in cubin ptx; do
  walls=(); loads=()
  for _ in $(seq "$runs"); do
    start=$(date +%s%N)
    line=$(CUDA_CACHE_DISABLE=1 LOCKSTEP_MODULE=$choice "$bin" info | grep '^loaded module:')
    end=$(date +%s%N)
    walls+=($(( (end - start) / 1000000 )))
    loads+=($(echo "$line" | sed -E 's/.*decode \+ load ([0-9.]+) ms.*/\1/'))
  done
  med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  echo "first-load LOCKSTEP_MODULE=$choice: ${line#loaded module: }"
  echo "first-load LOCKSTEP_MODULE=$choice: median of $runs: lockstep info $(med "${walls[@]}") ms wall, decode + load $(med "${loads[@]}") ms (runs: ${walls[*]} ms)"
done
