#!/usr/bin/env bash
# The GPU check lives in bench/gpu/; this path is kept because commands and docs name it.
exec bash "$(dirname "$0")/gpu/gpu_check.sh" "$@"
