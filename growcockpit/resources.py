"""Where the shipped themes and sample plans live, installed or from a checkout.

A wheel carries them under `growcockpit/_data/`; an editable install or a plain
checkout finds them at the repository root.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    installed = _PACKAGE / "_data" / name
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / name


def themes_dir() -> Path:
    return _data_dir("themes")


def sample_plans_dir() -> Path:
    return _data_dir("sample_plans")


def sample_plan(name: str) -> Path:
    """Path of a shipped plan, by file name with or without `.toml`."""
    stem = name.removesuffix(".toml")
    return sample_plans_dir() / f"{stem}.toml"
