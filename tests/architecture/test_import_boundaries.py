"""Layering: the cockpit, plans and protocol must import without torch.

Each check runs in a fresh interpreter so nothing imported by other tests can
hide a stray `import torch`.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "datasets")


@pytest.mark.parametrize(
    "module",
    [
        "growcockpit",  # growcockpit.track and the callbacks load torch on first use only
        "growcockpit.ui",
        "growcockpit.ui.app",
        "growcockpit.plan",
        "growcockpit.protocol",
        "growcockpit.cli",
    ],
)
def test_module_imports_without_torch(module: str) -> None:
    code = (
        f"import sys, importlib; importlib.import_module({module!r}); "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"{module} pulled in {out.stdout.strip()}"


@pytest.mark.parametrize("module", ["growcockpit.plan", "growcockpit.protocol"])
def test_pure_layers_import_no_textual(module: str) -> None:
    code = f"import sys, importlib; importlib.import_module({module!r}); print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_backend_and_grow_import_no_textual() -> None:
    code = (
        "import sys; import growcockpit.backend.run, growcockpit.grow, growcockpit.metrics; "
        "print('textual' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
