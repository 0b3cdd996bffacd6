"""Every growth operator at a stage change on an FSDP2-sharded model (2 gloo ranks) equals
the same operator on the unsharded model, weights and carried Adam moments bit for bit:
stack in every variant (BERT, GPT-2, Llama) and `continue` on the local-shard path; width
and depth coalesce, de-coalesce and interpolate on the gather path
(tests/backend/fsdp_ops_worker.py). The local path gathers no whole tensor, weights or
moments."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO, TESTS

pytestmark = pytest.mark.slow

WORKER = TESTS / "backend" / "fsdp_ops_worker.py"


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    out = tmp_path_factory.mktemp("fsdp-ops") / "rows.jsonl"
    path = os.pathsep.join([str(REPO), str(TESTS), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2"]
    res = subprocess.run(
        [*cmd, str(WORKER), str(out)], capture_output=True, text=True, timeout=300, env=env
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    return [json.loads(line) for line in Path(out).read_text().splitlines()]


def test_each_operator_matches_the_unsharded_one(rows: list[dict[str, object]]) -> None:
    seen = {(r["enter"], r["local"]) for r in rows}
    assert seen == {
        ("stack", True),
        ("continue", True),
        ("coalesce", False),
        ("decoalesce", False),
        ("interpolate", False),
    }
    details = {d for r in rows for d in r["detail"] if isinstance(d, str)}  # type: ignore[attr-defined]
    for variant in ("source=top", "source=middle", "source=bottom", "source=random", "init=zero"):
        assert any(variant in d for d in details), variant
    assert {r["plan"] for r in rows if r["local"]} == {"bert-stack", "gpt2-late", "llama-stack"}
    for kind in ("coalesce width and depth", "coalesce depth", "coalesce width;"):
        assert any(d.startswith(kind) for d in details), kind
    for row in rows:
        want, got = row["detail"]  # type: ignore[misc]
        assert want == got, row
        assert row["weights"] == 0.0, row
        assert row["moments"] == 0.0, row
        plain, sharded, carried = row["carried"]  # type: ignore[misc]
        assert plain == sharded == carried, row
        assert (carried > 0) == row["local"], row
        assert (row["gathers"] == 0) == row["local"], row  # the local path gathers nothing
