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
