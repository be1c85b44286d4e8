#!/usr/bin/env bash
# The whole multi-GPU check in one command (issues #22 and #23), on a machine with G ≥ 2 GPUs:
#
#   scripts/multi-gpu-check.sh [G]        (G: GPUs to use, default all; OUT=dir for the logs;
#                                          SECTIONS="bits failure scaling", the default, or some)
#
# 1. Bits: the Minority Game (split model), n-body (f32 and f64) and the bridge (Philox fused
#    on every rank, Box–Muller, Sobol; paths and increments) on k = 1..G GPUs, on 3 ranks
#    sharing 2 GPUs (host collectives), as two "hosts" (separate launchers, disjoint
#    CUDA_VISIBLE_DEVICES, loopback rendezvous) and on the CPU twin: every run's `bits` equal.
# 2. Failure: one rank killed (SIGKILL) mid-run, under the launcher and across two "hosts"
#    (the other launcher learns it only through the rendezvous store): every other rank ends
#    within seconds with an error, and no output file is complete.
# 3. Scaling: strong (k = 1, 2, G/…) and weak (work per GPU fixed) for the three families,
#    with `nvidia-smi topo -m` beside the tables. Markdown on stdout (bench/results/ takes it).
#
# Needs the bundle's CLI (target/bundle/lockstep; LOCKSTEP_BIN overrides) and NCCL (found by
# lockstep: LOCKSTEP_NCCL, the loader path, or the nvidia-nccl-cu13 Python package). The
# launcher sets NCCL_NVLS_ENABLE=0 (NVLink multicast stays off).
set -u
B=${LOCKSTEP_BIN:-target/bundle/lockstep}
G=${1:-$(nvidia-smi -L | wc -l)}
OUT=${OUT:-/tmp/multi-gpu}
mkdir -p "$OUT"
fail=0
port=29600
SECTIONS=${SECTIONS:-bits failure scaling}
calc() { awk "BEGIN { printf \"%.3f\", $1 }"; }
has() { case " $SECTIONS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
has_family() { case " ${FAMILIES:-mg nbody bridge} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

echo "# Multi-GPU check, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
nvidia-smi -L | head -"$G" | sed 's/^/    /'
echo
echo '```'
nvidia-smi topo -m 2>/dev/null | head -$((G + 2))
echo '```'

# run LABEL CMD… : runs, prints "LABEL rc bits seconds" (bits/seconds from rank 0's summary).
run() {
  local label=$1; shift
  local log="$OUT/$(echo "$label" | tr ' /=' '___').log"
  local t0=$(date +%s.%N)
  "$@" > "$log" 2>&1
  local rc=$?
  local t1=$(date +%s.%N)
  local bits=$(grep -m1 -o 'bits: [0-9a-f]*' "$log" | cut -d' ' -f2)
  local secs=$(grep -m1 -o 'seconds: [0-9.]*' "$log" | cut -d' ' -f2)
  local transport=$(grep -m1 -o 'transport: [^,]*' "$log" | cut -d' ' -f2-)
  printf '%s|%s|%s|%s|%.1f|%s\n' "$label" "$rc" "${bits:-none}" "${secs:-}" "$(calc "$t1 - $t0")" "$transport"
  [ "$rc" = 0 ] || { echo "FAILED ($rc): $label — last lines of $log:" >&2; tail -5 "$log" >&2; }
}

# bits FAMILY ARGS… : the family on the CPU twin, k = 1..G GPUs, 3 ranks on 2 GPUs, two hosts.
bits() {
  local fam=$1; shift
  local rows=()
  rows+=("$(run "$fam $* @ cpu twin" "$B" run --ranks 1 "$fam" "$@")")
  for k in $(seq 1 "$G"); do rows+=("$(run "$fam $* @ $k GPU" "$B" run --gpus "$k" "$fam" "$@")"); done
  rows+=("$(CUDA_VISIBLE_DEVICES=0,1 run "$fam $* @ 3 ranks on 2 GPUs" "$B" run --gpus 3 "$fam" "$@")")
  port=$((port + 1))
  (CUDA_VISIBLE_DEVICES=1 "$B" run --gpus 1 --hosts 2 --host-rank 1 --master 127.0.0.1:$port "$fam" "$@" > "$OUT/host1.log" 2>&1 &)
  rows+=("$(CUDA_VISIBLE_DEVICES=0 run "$fam $* @ 2 hosts x 1 GPU" "$B" run --gpus 1 --hosts 2 --host-rank 0 --master 127.0.0.1:$port "$fam" "$@")")
  sleep 0.5
  local want=$(echo "${rows[0]}" | cut -d'|' -f3)
  for r in "${rows[@]}"; do
    local got=$(echo "$r" | cut -d'|' -f3) rc=$(echo "$r" | cut -d'|' -f2)
    local ok=yes
    [ "$got" = "$want" ] && [ "$rc" = 0 ] && [ "$want" != none ] || { ok=NO; fail=1; }
    echo "| $(echo "$r" | cut -d'|' -f1) | $(echo "$r" | cut -d'|' -f6) | \`${got:0:16}\` | $ok |"
  done
}

if has bits; then
echo
echo "## Bits equal across GPU counts (k = 1..$G), 3 ranks on 2 GPUs, two hosts, CPU twin"
echo
echo "| run | transport | bits (first 16 hex) | equal to the CPU twin |"
echo "|---|---|---|---|"
bits mg --n 100001 --m 5 --s 2 --p 200 --groups 4096 --trials 2 --model step
bits mg --n 30001 --m 3 --s 3 --p 100 --groups 1000 --trials 1 --model step
bits nbody --n 3001 --steps 3 --precision f32
bits nbody --n 2001 --steps 2 --precision f64 --kernel global
bits bridge --paths 100003 --steps 64 --source philox --precision f32
bits bridge --paths 100003 --steps 64 --source philox-bm --precision f64
bits bridge --paths 100003 --steps 64 --source philox-bm --precision f32 --increments
bits bridge --paths 100003 --steps 33 --source sobol --seed 1 --precision f32 --increments
bits bridge --paths 50001 --steps 16 --dims 3 --source sobol --seed 7 --precision f64
fi

if has failure; then
echo
echo "## Failure: one rank killed mid-run"
echo
# kill_test LABEL WHICH CMD… : starts CMD, kills rank WHICH (by its LOCKSTEP_RANK) after 4 s.
kill_test() {
  local label=$1 which=$2; shift 2
  rm -f "$OUT/killed.npy" "$OUT/killed.npy.partial"
  "$@" > "$OUT/kill.log" 2>&1 &
  local launcher=$!
  sleep 4
  local victim=""
  for p in $(pgrep -f "lockstep nbody" || true); do
    if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "LOCKSTEP_RANK=$which"; then victim=$p; fi
  done
  local t0=$(date +%s.%N)
  [ -n "$victim" ] && kill -9 "$victim"
  wait "$launcher"; local rc=$?
  # the other launcher (two-host case) and its ranks
  local left=0
  for i in $(seq 1 100); do
    left=$(pgrep -f "lockstep (nbody|run)" | wc -l)
    [ "$left" = 0 ] && break
    sleep 0.1
  done
  local t1=$(date +%s.%N)
  local complete=no
  [ -e "$OUT/killed.npy" ] && complete=YES
  local ok=yes
  { [ "$rc" != 0 ] && [ "$left" = 0 ] && [ "$complete" = no ] && [ -n "$victim" ]; } || { ok=NO; fail=1; }
  printf '| %s | rank %s (pid %s) | exit %s | all ranks gone after %.1f s | output complete: %s | %s |\n' \
    "$label" "$which" "${victim:-none}" "$rc" "$(calc "$t1 - $t0")" "$complete" "$ok"
  grep -h 'error' "$OUT/kill.log" "$OUT/host1.log" 2>/dev/null | sort | uniq | head -6 | sed 's/^/    /'
}
echo "| run | killed | launcher | stopped | output | ok |"
echo "|---|---|---|---|---|---|"
kill_test "$G GPUs, one launcher" 1 "$B" run --gpus "$G" nbody --n 400000 --steps 50 --every 50 --out "$OUT/killed.npy"
port=$((port + 1))
(CUDA_VISIBLE_DEVICES=1 "$B" run --gpus 1 --hosts 2 --host-rank 1 --master 127.0.0.1:$port nbody --n 400000 --steps 50 > "$OUT/host1.log" 2>&1 &)
kill_test "2 hosts, rank 1 on the other host" 1 env CUDA_VISIBLE_DEVICES=0 "$B" run --gpus 1 --hosts 2 --host-rank 0 --master 127.0.0.1:$port nbody --n 400000 --steps 50 --every 50 --out "$OUT/killed.npy"
fi

# scale TITLE KIND FAMILY "ARGS at k" … : a table of seconds against k.
scale_row() {
  local label=$1 k=$2; shift 2
  run "$label" "$B" run --gpus "$k" "$@"
}
if has scaling; then
ks="1 2"

[ "$G" -ge 4 ] && ks="$ks 4"
echo
echo "## Scaling (seconds of the computation between barriers, rank 0; efficiency = t1/(k·tk) strong, t1/tk weak)"
for fam in ${FAMILIES:-mg nbody bridge}; do
  echo
  echo "### $fam"
  echo
  echo "| kind | k | problem | seconds | efficiency | bits |"
  echo "|---|---|---|---|---|---|"
  for kind in strong weak; do
    t1=""
    for k in $ks; do
      case "$fam/$kind" in
        mg/strong) args="mg --n 1000000001 --p 100 --groups 1048576 --trials 1 --model step" ;;
        mg/weak) args="mg --n $((250000000 * k + 1)) --p 100 --groups $((262144 * k)) --trials 1 --model step" ;;
        nbody/strong) args="nbody --n 1048576 --steps 1 --precision f32 --every 1" ;;
        nbody/weak) args="nbody --n $(python3 -c "import math;print(int(524288*math.sqrt($k)))") --steps 1 --precision f32 --every 1" ;;
        bridge/strong) args="bridge --paths 67108864 --steps 32 --source sobol --seed 1 --precision f32" ;;
        bridge/weak) args="bridge --paths $((33554432 * k)) --steps 32 --source sobol --seed 1 --precision f32" ;;
      esac
      r=$(scale_row "$fam $kind k=$k" "$k" $args)
      s=$(echo "$r" | cut -d'|' -f4)
      [ -z "$t1" ] && t1=$s
      if [ -n "$s" ] && [ -n "$t1" ]; then
        if [ "$kind" = strong ]; then e=$(calc "$t1 / ($k * $s)"); else e=$(calc "$t1 / $s"); fi
      else
        e="-"; fail=1
      fi
      echo "| $kind | $k | \`${args#* }\` | $s | $e | \`$(echo "$r" | cut -d'|' -f3 | cut -c1-12)\` |"
    done
  done
done
if [ "$G" -ge 4 ] && has_family mg; then
  echo
  echo "### mg at n = 10^10 (160 GB: four GPUs)"
  echo
  r=$(scale_row "mg 1e10 k=4" 4 mg --n 10000000001 --p 20 --groups 4194304 --trials 1 --model step)
  echo "| k = 4 | n = 10^10, p = 20, 2^22 groups | $(echo "$r" | cut -d'|' -f4) s | bits \`$(echo "$r" | cut -d'|' -f3 | cut -c1-16)\` | rc $(echo "$r" | cut -d'|' -f2) |"
fi
fi
echo
[ "$fail" = 0 ] && echo "multi-gpu-check: PASS" || echo "multi-gpu-check: FAIL (see above and $OUT)"
exit $fail
