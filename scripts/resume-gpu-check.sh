#!/usr/bin/env bash
# Checkpoint/resume across the GPU and the CPU with the release CLI (issue #25), for a GPU
# machine without Rust:
#   scripts/resume-gpu-check.sh [LOCKSTEP]      (default: target/bundle/lockstep, else target/release/lockstep)
# Every case compares output files byte for byte with an uninterrupted CPU run:
#   - n-body exact (f32 and f64): GPU run with periodic checkpoints; its last checkpoint resumed on
#     the CPU and on the GPU; a CPU checkpoint resumed on the GPU; a GPU run stopped by SIGTERM
#     and resumed on the CPU;
#   - Minority Game: the kernel-per-step model checkpoints mid-game (lean s = 2 kernels and
#     general s = 3); resumed on the CPU and on every GPU model; a CPU checkpoint resumed on the GPU;
#     the standalone model stopped by SIGINT and resumed.
# Prints one line per case and `resume-gpu-check: all passed` (exit 0) or the failures (exit 1).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
L=${1:-}
if [ -z "$L" ]; then
  if [ -x "$here/target/bundle/lockstep" ]; then L="$here/target/bundle/lockstep"; else L="$here/target/release/lockstep"; fi
fi
[ -x "$L" ] || { echo "no lockstep binary at $L"; exit 2; }
"$L" info | grep -q "^GPU 0:" || { echo "resume-gpu-check: no GPU ($("$L" info | tail -1))"; exit 1; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
failed=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; failed=$((failed + 1)); }
same() { # name file-a file-b
  if cmp -s "$2" "$3"; then ok "$1"; else bad "$1 ($2 and $3 differ)"; fi
}
run() { "$@" >"$d/log" 2>&1 || { echo "  command failed: $*"; cat "$d/log"; return 1; }; }

# ---- n-body -----------------------------------------------------------------------------------
for prec in f32 f64; do
  nb=(nbody --n 3000 --steps 400 --every 50 --precision "$prec" --init plummer --seed 3)
  run "$L" "${nb[@]}" --device cpu --out "$d/want-$prec.npy" || { bad "nbody $prec reference"; continue; }
  run "$L" "${nb[@]}" --device gpu --out "$d/gpu-$prec.npy" --checkpoint "$d/g-$prec.ckpt" --checkpoint-every 130 \
    && same "nbody $prec GPU with checkpoints = CPU" "$d/want-$prec.npy" "$d/gpu-$prec.npy"
  for dev in cpu gpu; do
    cp "$d/g-$prec.ckpt" "$d/r.ckpt"
    run "$L" "${nb[@]}" --device "$dev" --out "$d/r-$dev-$prec.npy" --resume "$d/r.ckpt" \
      && same "nbody $prec GPU checkpoint (step 390) resumed on $dev" "$d/want-$prec.npy" "$d/r-$dev-$prec.npy"
  done
  run "$L" "${nb[@]}" --device cpu --out "$d/c-$prec.npy" --checkpoint "$d/c-$prec.ckpt" --checkpoint-every 170 \
    && run "$L" "${nb[@]}" --device gpu --out "$d/cg-$prec.npy" --resume "$d/c-$prec.ckpt" \
    && same "nbody $prec CPU checkpoint resumed on the GPU" "$d/want-$prec.npy" "$d/cg-$prec.npy"
done
# SIGTERM mid-run on the GPU (a longer run), resumed on the CPU.
long=(nbody --n 8000 --steps 200 --every 50 --precision f64 --init plummer --seed 5)
run "$L" "${long[@]}" --device cpu --out "$d/long-want.npy" || bad "nbody long reference"
rm -f "$d/k.ckpt"
"$L" "${long[@]}" --device gpu --out "$d/long.npy" --checkpoint "$d/k.ckpt" --checkpoint-every 1 >/dev/null 2>"$d/err" &
pid=$!
for _ in $(seq 600); do [ -f "$d/k.ckpt" ] && break; sleep 0.05; done
kill -TERM "$pid" 2>/dev/null
wait "$pid"; code=$?
if [ "$code" = 1 ] && grep -q "interrupted by a signal" "$d/err"; then ok "nbody GPU run stopped by SIGTERM: $(cut -c1-80 "$d/err")"
elif [ "$code" = 0 ]; then echo "note: the GPU run finished before SIGTERM; resuming its last periodic checkpoint"
else bad "nbody SIGTERM: exit $code: $(cat "$d/err")"; fi
run "$L" "${long[@]}" --device cpu --out "$d/long.npy" --resume "$d/k.ckpt" \
  && same "nbody GPU run stopped by SIGTERM, resumed on the CPU" "$d/long-want.npy" "$d/long.npy"

# ---- Minority Game ----------------------------------------------------------------------------
for s in 2 3; do
  mg=(mg --n 20001 --m 5 --s "$s" --p 300 --trials 5 --groups 1000 --seed 11)
  run "$L" "${mg[@]}" --device cpu --out "$d/mg-want-$s.csv" || { bad "mg s=$s reference"; continue; }
  run "$L" "${mg[@]}" --device gpu --model step --out "$d/mg-step-$s.csv" --checkpoint "$d/m-$s.ckpt" --checkpoint-every 470 \
    && same "mg s=$s GPU step model with checkpoints = CPU" "$d/mg-want-$s.csv" "$d/mg-step-$s.csv"
  for target in "cpu" "gpu --model step" "gpu --model standalone" "gpu --model grid-sync"; do
    cp "$d/m-$s.ckpt" "$d/r.ckpt"
    # shellcheck disable=SC2086
    run "$L" "${mg[@]}" --device $target --out "$d/mg-r.csv" --resume "$d/r.ckpt" \
      && same "mg s=$s GPU mid-game checkpoint (step 1410) resumed on $target" "$d/mg-want-$s.csv" "$d/mg-r.csv"
  done
  run "$L" "${mg[@]}" --device cpu --out "$d/mg-c.csv" --checkpoint "$d/mc-$s.ckpt" --checkpoint-every 700 \
    && run "$L" "${mg[@]}" --device gpu --model step --out "$d/mg-cg.csv" --resume "$d/mc-$s.ckpt" \
    && same "mg s=$s CPU checkpoint resumed on the GPU" "$d/mg-want-$s.csv" "$d/mg-cg.csv"
done
# SIGINT during standalone batches, resumed.
mg=(mg --n 4001 --p 1000 --trials 100 --groups 64 --seed 3)
run "$L" "${mg[@]}" --device cpu --out "$d/sa-want.csv" || bad "mg standalone reference"
rm -f "$d/sa.ckpt"
"$L" "${mg[@]}" --device gpu --model standalone --out "$d/sa.csv" --checkpoint "$d/sa.ckpt" --checkpoint-every 20000 >/dev/null 2>"$d/err" &
pid=$!
for _ in $(seq 600); do [ -f "$d/sa.ckpt" ] && break; sleep 0.05; done
kill -INT "$pid" 2>/dev/null
wait "$pid"; code=$?
if [ "$code" = 1 ] && grep -q "interrupted by a signal" "$d/err"; then ok "mg standalone stopped by SIGINT"
elif [ "$code" = 0 ]; then echo "note: the standalone run finished before SIGINT; resuming its last checkpoint"
else bad "mg SIGINT: exit $code: $(cat "$d/err")"; fi
run "$L" "${mg[@]}" --device gpu --model standalone --out "$d/sa.csv" --resume "$d/sa.ckpt" \
  && same "mg standalone stopped by SIGINT, resumed" "$d/sa-want.csv" "$d/sa.csv"

if [ "$failed" = 0 ]; then echo "resume-gpu-check: all passed"; else echo "resume-gpu-check: $failed failed"; exit 1; fi
