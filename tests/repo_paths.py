"""Where the tests find the repository's files, wherever a test module sits in tests/."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
TINY_TOML = TESTS / "plans" / "tiny.toml"
TINY_VCYCLE_TOML = TESTS / "plans" / "tiny-vcycle.toml"
