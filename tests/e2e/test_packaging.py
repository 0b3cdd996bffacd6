"""A non-editable install finds the shipped themes and sample plans (they live outside the package)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from repo_paths import REPO

ROOT = REPO

pytestmark = pytest.mark.slow


def test_wheel_carries_themes_and_sample_plans(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("growcockpit-*.whl"))
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        "import growcockpit, growcockpit.resources as r; "
        "print(growcockpit.__file__); print(r.themes_dir()); print(r.sample_plan('cpu-demo'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(site)},
    ).stdout.split("\n")
    assert out[0].startswith(str(site)), "imported the checkout, not the wheel"
    themes, demo = Path(out[1]), Path(out[2])
    assert themes.is_relative_to(site) and {"dark.tcss", "light.tcss", "high-contrast.tcss"} <= {
        p.name for p in themes.iterdir()
    }
    assert (
        demo.is_relative_to(site)
        and demo.read_text() == (ROOT / "sample_plans" / "cpu-demo.toml").read_text()
    )
