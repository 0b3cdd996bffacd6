"""Hostile plan inputs are answered in bounded time with one line naming the limit.

Each case was a fault-table row: a RecursionError traceback (100k-deep array or
inline table), minutes of work (a 100000-part dotted key, 200k stages), or a plan
that validated and then failed deep in training (a trillion-token vocabulary,
`lr = 1e18`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from repo_paths import TINY_TOML

from growcockpit.cli import main

TINY: str = TINY_TOML.read_text()
STAGE = '\n[[stages]]\nname = "s"\nlayers = 4\nenter = "continue"\nsteps = 1\n'
HEAD = TINY.split("[[stages]]")[0]


def _inline_stages(n: int) -> str:
    one = '{name = "s", layers = 2, steps = 1}'
    return (
        TINY.split("[model]")[0]
        + "stages = ["
        + ", ".join([one] * n)
        + "]\n[model]"
        + (HEAD.split("[model]")[1])
    )


CASES = {
    "deep array": (TINY + "\nx = " + "[" * 100_000 + "]" * 100_000 + "\n", "MAX_NESTING"),
    "deep inline table": (TINY + "\ny = " + "{a=" * 100_000 + "1" + "}" * 100_000, "MAX_NESTING"),
    "dotted key": (TINY + "\n" + ".".join(["a"] * 100_000) + " = 1\n", "MAX_KEY_PARTS"),
    "200k stages": (TINY + STAGE * 200_000, "MAX_PLAN_BYTES"),
    "5000 inline stages": (_inline_stages(5000), "MAX_STAGES"),
    "many keys": (
        TINY.replace(
            "[model]", "[z]\n" + "".join(f"k{i} = 1\n" for i in range(20_000)) + "[model]"
        ),
        "MAX_KEYS",
    ),
    "vocab": (TINY.replace('"train:2000"', '"train:1000000000000"'), "MAX_VOCAB"),
    "lr": (TINY.replace("lr = 1e-3", "lr = 1e18"), "MAX_LR"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_plan_is_one_line_naming_the_limit_within_2_s(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, limit = CASES[case]
    path = tmp_path / "plan.toml"
    path.write_text(text)
    start = time.perf_counter()
    code = main(["plan", "validate", str(path)])
    took = time.perf_counter() - start
    err = capsys.readouterr().err
    assert code == 2, err[-300:]
    assert err.count("\n") == 1 and "Traceback" not in err and len(err) < 400, err[-300:]
    assert limit in err and str(path) in err
    assert took < 2.0, f"{case}: {took:.2f} s"


def test_a_fifo_as_the_plan_does_not_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.mkfifo(tmp_path / "plan.toml")
    assert main(["plan", "validate", str(tmp_path / "plan.toml")]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_bounds_do_not_refuse_real_plans(capsys: pytest.CaptureFixture[str]) -> None:
    from repo_paths import REPO

    plans = sorted((REPO / "sample_plans").glob("*.toml"))
    assert plans
    assert main(["plan", "validate", *map(str, plans)]) == 0, capsys.readouterr().err
