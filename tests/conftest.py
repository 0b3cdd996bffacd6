"""Shared fixtures. Training tests share one tokenizer/token cache per session."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Tests never read or write the user's remembered dashboard views (XDG state).
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="gc-state-")


@pytest.fixture(scope="session")
def gc_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh GROWCOCKPIT_CACHE, so tests never touch the user's ~/.cache."""
    path = tmp_path_factory.mktemp("gc-cache")
    os.environ["GROWCOCKPIT_CACHE"] = str(path)
    return path


@pytest.hookimpl(trylast=True)  # after `-m` deselected what it leaves out
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A `gpu` test needs a CUDA device: skipped where there is none, so `make test` passes
    on a CPU machine and `-m gpu` on a GPU machine runs them. torch is imported only when a
    collected test carries the marker, so a `-m "not gpu"` run pays nothing for it."""
    gpu = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (a `gpu` test)")
    for item in gpu:
        item.add_marker(skip)
