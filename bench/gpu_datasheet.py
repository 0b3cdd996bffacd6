"""Moved to bench/gpu/gpu_datasheet.py; this shim serves imports by the old path (step_vs_reference.py, reference/)."""

from _gpu_moved import moved

moved(__name__)
