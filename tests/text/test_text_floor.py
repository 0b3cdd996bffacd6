"""`growcockpit.text` is floor 1: the standard library only, and `plan` stands on it, not on
`protocol`.

import-linter's contract names the packages text may not import; this reads every module of
the package and accepts only the standard library, so a new dependency (numpy, say) that no
contract lists is refused too. Importing `growcockpit.plan` runs in a fresh interpreter so
that no other test's imports can hide an arrow from plan to protocol.
"""

from __future__ import annotations

import ast
import subprocess
import sys

from repo_paths import REPO

TEXT = REPO / "growcockpit" / "text"


def _imported(name: str) -> set[str]:
    tree = ast.parse(TEXT.joinpath(name).read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"text/{name}: a relative import (name the module)"
            names.add(node.module or "")
    return names


def test_text_modules_import_the_standard_library_only() -> None:
    modules = sorted(p.name for p in TEXT.glob("*.py"))
    assert {"safe_text.py", "wording.py", "safe_json.py", "control_error.py"} <= set(modules)
    outside = {
        f"text/{name}: {imported}"
        for name in modules
        for imported in _imported(name)
        if imported.split(".")[0] not in sys.stdlib_module_names and imported != "__future__"
    }
    assert not outside, f"text imports beyond the standard library: {sorted(outside)}"


def test_plan_imports_nothing_of_protocol() -> None:
    code = (
        "import sys, importlib, pkgutil, growcockpit.plan as plan; "
        "[importlib.import_module('growcockpit.plan.' + m.name) "
        "for m in pkgutil.iter_modules(plan.__path__)]; "
        "print(sorted(m for m in sys.modules if m.startswith('growcockpit.protocol')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", f"plan pulled in {out.stdout.strip()}"
