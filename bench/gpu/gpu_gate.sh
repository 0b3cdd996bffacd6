#!/usr/bin/env bash
# The depth gate at the GPU scale in one loan (bench/time_to_loss.py --scale gpu on the
# carried Debian documentation corpus), every phase time-boxed. gpu_check.sh runs this
# instead of its parts 0-4 when GPU_CHECK_CORPUS names the corpus:
#
#   GPU_CHECK_CORPUS=out/corpus/debian-docs.txt.xz bash bench/gpu_check.sh   # on the GPU machine
#   GPU_CHECK_CORPUS=/tmp/small.txt.xz bash bench/gpu_check.sh --tiny         # the CPU rehearsal
#
# Device-time budget of one loan (8 min = 480 s, the machine's cold start included):
#   cold start of the machine (not this script)         ≤ 90 s  (estimate)
#   wheels check, CUDA init (gpu_check.sh)               ~ 15 s
#   1. prepare: unpack the .xz, train the vocab-1024 tokenizer, tokenize, per family, the
#      two families side by side (bench/ttl/corpus.py prepare)      ≤ 100 s (cap)
#   2. GPT-2 and Llama at once, each time_to_loss with --parallel 5 on the one GPU:
#      baseline (8 × 384, WSD), depth-4, depth-1 (equal FLOPs), late, mslt-longshallow-emb,
#      seed 0; every run capped at GPU_GATE_RUN_S (150 s), the phase at 190 s
#   3. a second seed of both when what is left covers a run (it does not at these defaults)
#   4. the gate table per family (ttl_gate_table.py) and the summary              ~ 10 s
#   = ≤ 315 s of command (GPU_GATE_LIMIT_S=330 caps it) + the cold start ≤ 420-480 s.
# The budget is GPU_GATE_BUDGET (3000) full-depth steps of 64 × 256 tokens (≈ 49 M tokens,
# ≈ 3.5 per non-embedding parameter): the scale's 6000 does not fit ten runs in one loan by
# the FLOPs estimate (≈ 1.5 TFLOP a full-depth step); the first loan prints ms per step, from
# which the next loan's budget is sized. A later loan adds seeds: GPU_GATE_SEEDS=1 (the table
# reads the JSON files of several loans together).
# Results under $OUT/gpu_gate/ (else $TMPDIR/gpu_gate/): <family>.json (time_to_loss),
# <family>.txt (its output), gate_<family>.md (the gate table), prepare.txt; last line
# `gpu_gate.sh: <s> s | gpt2.depth_gate=… gpt2.best_fixed_depth=… | llama.depth_gate=… …`.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PYTHON:-python3}"
TINY=0
for a in "$@"; do [ "$a" = "--tiny" ] && TINY=1; done
CORPUS="${GPU_CHECK_CORPUS:?GPU_CHECK_CORPUS: the corpus to train on (bench/ttl/corpus.py build)}"
if [ ! -f "$CORPUS" ]; then
  echo "gpu_gate.sh: GPU_CHECK_CORPUS=$CORPUS: no such file; carry it (run's carry) or build it with bench/ttl/corpus.py build" >&2
  exit 2
fi
RESULTS="${OUT:-${TMPDIR:-/tmp}}/gpu_gate"
mkdir -p "$RESULTS"
RUNS=$(mktemp -d "${TMPDIR:-/tmp}/gpu-gate-runs.XXXXXX")
trap 'rm -rf "$RUNS"' EXIT
LIMIT="${GPU_GATE_LIMIT_S:-330}"
RUN_S="${GPU_GATE_RUN_S:-150}"
SEEDS="${GPU_GATE_SEEDS:-0}"
FAMILIES="${GPU_GATE_FAMILIES:-gpt2 llama}"
METHODS="baseline,depth-4,depth-1,late,mslt-longshallow-emb"
if [ "$TINY" = 1 ]; then  # quick scale (4 layers), a few steps, one family, on the CPU
  SCALE=quick; BUDGET="${GPU_GATE_BUDGET:-16}"; FAMILIES="${GPU_GATE_FAMILIES:-gpt2}"
  METHODS="baseline,depth-2,depth-1,late,mslt-longshallow-emb"
  EXTRA=(--device cpu --threads 1 --evals 4)
else
  SCALE=gpu; BUDGET="${GPU_GATE_BUDGET:-3000}"; EXTRA=(--device cuda)
fi
START=$SECONDS
cap() {  # seconds for the next phase: at most $1 and what is left of LIMIT, never below 1
  local left=$((LIMIT - (SECONDS - START)))
  if [ "$left" -lt "$1" ]; then echo $((left > 1 ? left : 1)); else echo "$1"; fi
}

echo "== 1 prepare the corpus: unpack, tokenizer, token shard (bench/ttl/corpus.py prepare)"
TP=$(cap 100)
PIDS=()
for f in $FAMILIES; do
  timeout -k 5 "$TP" "$PY" bench/ttl/corpus.py prepare "$CORPUS" --families "$f" --scale "$SCALE" \
    >"$RESULTS/prepare_$f.txt" 2>&1 &
  PIDS+=($!)
done
for p in "${PIDS[@]}"; do wait "$p" || { cat "$RESULTS"/prepare_*.txt; echo "gpu_gate.sh: prepare FAILED"; exit 1; }; done
cat "$RESULTS"/prepare_*.txt | sort -u | tee "$RESULTS/prepare.txt"

phase() {  # $1: seeds. Every family at once, its runs side by side; each run capped
  local t run pids=() f
  t=$(cap $((RUN_S + 40)))
  run=$((t - 30 < RUN_S ? t - 30 : RUN_S))
  for f in $FAMILIES; do
    timeout -k 10 "$t" "$PY" bench/time_to_loss.py --scale "$SCALE" --corpus "$CORPUS" --family "$f" \
      --methods "$METHODS" --no-depth-controls --baseline-schedules wsd --budget "$BUDGET" \
      --seeds "$1" --parallel 5 --timeout-s "$run" --runs-dir "$RUNS/$f" \
      --json "$RESULTS/$f.json" "${EXTRA[@]}" >"$RESULTS/$f.txt" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || true; done
}
echo "== 2 the gate, late and MSLT, seed(s) $SEEDS, families: $FAMILIES (≤ $RUN_S s a run)"
phase "$SEEDS"
LAST="${SEEDS##*,}"
if [ "$(cap $((RUN_S + 40)))" -ge $((RUN_S + 40)) ]; then
  echo "== 3 one more seed ($((LAST + 1))): $(( LIMIT - (SECONDS - START) )) s left"
  phase "$SEEDS,$((LAST + 1))"
else
  echo "== 3 one more seed: skipped, $(( LIMIT - (SECONDS - START) )) s left of GPU_GATE_LIMIT_S=$LIMIT"
fi

echo "== 4 the gate tables"
SUMMARY=()
for f in $FAMILIES; do
  grep -E "^(time_to_loss|  |$f)" "$RESULTS/$f.txt" | tail -40 || true
  if [ -f "$RESULTS/$f.json" ] && "$PY" bench/ttl/ttl_gate_table.py "$RESULTS/$f.json" --family "$f" \
      --point "$SCALE, $(basename "$CORPUS"), $BUDGET steps" >"$RESULTS/gate_$f.md" 2>&1; then
    cat "$RESULTS/gate_$f.md"
    SUMMARY+=("$(grep -o "$f\.depth_gate=[a-z_]*\( $f\.best_fixed_depth=[0-9]*\)\?" "$RESULTS/$f.txt" | tail -1)")
  else
    tail -5 "$RESULTS/$f.txt"
    SUMMARY+=("$f FAILED")
  fi
done
echo "gpu_gate.sh: $((SECONDS - START)) s | $(IFS='|'; echo "${SUMMARY[*]}")"
