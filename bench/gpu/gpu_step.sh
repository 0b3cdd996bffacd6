#!/usr/bin/env bash
# The step against the reference loop on a GPU, with honest figures (not yet run on a GPU:
# estimated 5-7 minutes on one H200 with a cold compile cache, most of it the compiled twins'
# compiles; GPU_STEP_LIMIT_S caps it, 420 s by default; bench/gpu/gpu_check.sh runs it first as its
# part 0):
#   0. warm-up, once, before anything is timed: CUDA (context, cuBLAS) and the three plans'
#      tokenizers and token caches (so no timed process builds them)
#   1. bench/step_vs_reference.py --scale full at the GPT-2-small, BERT-Base and SmolLM-135M
#      shapes (sample_plans/gpt2-mslt.toml, mslt-bert-base.toml, llama-smollm-135m.toml): the
#      engine's own step (Trainer.train_step) at full depth (GPU_STEP_ROWS=all: every stage
#      too, longer), against the
#      reference loop loaded with the same weights, interleaved in the same rounds; eager,
#      and compiled twins of the full-depth step in the same rounds (compiled/eager from one
#      eager figure); dispatched operators and CUDA kernel launches per step; MFU against the
#      datasheet peak (bench/gpu/gpu_datasheet.py) and against the peak measured on the spot,
#      labelled; the per-layer metrics' cost.
# GPU_STEP_COMPILE=none leaves the compiled twins out (the loan does: eager only, in its cap).
# Everything goes under one folder, $OUT/gpu_step (or $GPU_STEP_DIR; /tmp/gpu_step without
# $OUT): step_vs_reference.log, step_vs_reference.json, summary.txt. The last line is the
# summary: `gpu_step.sh: ... vs_reference=... mfu_datasheet=...`.
#
#   bash bench/gpu/gpu_step.sh          # on the GPU machine
#   bash bench/gpu/gpu_step.sh --tiny   # the CPU rehearsal (tiny shapes, quick rounds)
set -euo pipefail
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=true
cd "$(dirname "$0")/../.."
ROOT="$PWD"
PY="${PYTHON:-python3}"
export GROWCOCKPIT_CACHE="${GROWCOCKPIT_CACHE:-${TMPDIR:-/tmp}/growcockpit-cache}"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
TINY=0
for a in "$@"; do [ "$a" = "--tiny" ] && TINY=1; done
if [ -n "${GPU_STEP_DIR:-}" ]; then DIR="$GPU_STEP_DIR"
elif [ -n "${OUT:-}" ]; then DIR="$OUT/gpu_step"
else DIR="${TMPDIR:-/tmp}/gpu_step"; fi
mkdir -p "$DIR"
FAMILIES="${GPU_STEP_PLANS:-gpt2,bert,llama}"
START=$SECONDS
if [ "$TINY" = 1 ]; then
  SCALE=(--scale tiny --quick --device cpu --compile "${GPU_STEP_COMPILE:-full}" --compile-backend eager)
else
  SCALE=(--scale full --compile "${GPU_STEP_COMPILE:-full}" --rows "${GPU_STEP_ROWS:-full}" --rounds "${GPU_STEP_ROUNDS:-3}")
fi

echo "== 0 warm-up: CUDA and the plans' data, once"
"$PY" - "$FAMILIES" "$TINY" <<'EOF' | tee "$DIR/warmup.log"
import sys, time
sys.path.insert(0, "bench")
import torch
from growcockpit.backend.data.blocks import load_blocks
from growcockpit.plan import load_plan
from reference.scales import plan_at
from step_vs_reference import PLANS
t = time.perf_counter()
if torch.cuda.is_available():
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    (a @ a).sum().item()
print(f"warm-up: CUDA {time.perf_counter() - t:.1f} s")
for family in sys.argv[1].split(","):
    t = time.perf_counter()
    plan = plan_at(load_plan(PLANS[family]), "tiny" if sys.argv[2] == "1" else "full")
    load_blocks(plan.data, plan.model.family, plan.seed)
    print(f"warm-up: {family} data {time.perf_counter() - t:.1f} s")
EOF

echo "== 1 the step against the reference (bench/step_vs_reference.py)"
LIMIT="${GPU_STEP_LIMIT_S:-420}"
set +e
timeout -k 10 "$LIMIT" "$PY" bench/step_vs_reference.py --plans "$FAMILIES" "${SCALE[@]}" \
    --json "$DIR/step_vs_reference.json" 2>&1 | tee "$DIR/step_vs_reference.log"
CODE=${PIPESTATUS[0]}
set -e
# the benchmark prints (and writes) its summary after every family: a cut run keeps them
LINE=$(grep '^step_vs_reference: ' "$DIR/step_vs_reference.log" | tail -1 || true)
if [ "$CODE" != 0 ]; then
  LINE="${LINE:-step_vs_reference: no family finished} (exit $CODE: FAILED or cut at ${LIMIT} s)"
fi
echo "gpu_step.sh: $((SECONDS - START)) s | $LINE" | tee "$DIR/summary.txt"
