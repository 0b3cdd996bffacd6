"""The GPU bench's modules moved to bench/gpu/. Code that still imports one by its old flat
name with only bench/ on sys.path (`from gpu_configs import ...`) gets the module from
bench/gpu/ itself, one module object under one name, through the shims beside this file."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

GPU_BENCH = Path(__file__).resolve().parent / "gpu"


def moved(name: str) -> ModuleType:
    """Load bench/gpu/<name>.py as `name` in place of the shim that asked for it (its own
    flat imports of its siblings then resolve through bench/gpu/ on sys.path)."""
    if str(GPU_BENCH) not in sys.path:
        sys.path.append(str(GPU_BENCH))
    spec = importlib.util.spec_from_file_location(name, GPU_BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
