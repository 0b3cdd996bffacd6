"""Every command line of the README's "Headless use" block, typed as a user
types it, into the installed `growcockpit` executable, against a live tiny CPU run.

The block is parsed, not copied: `a|b|c` is each of a, b, c; `[X]` is the line with and
without X; `[...]` is left out. The lines run in a scratch directory holding the files
they name (PLAN.toml, A.toml, B.toml, remaining.toml), so `runs/my-run` is literally
that. Only the placeholders STEP and step-200 become a checkpoint the run really has.

A README line this test does not know fails it (the table below must say how to run
it), and so does any command the program refuses: `ctl RUN set_lr 0.5` was refused for
weeks with no test noticing. A few commands cannot run on a 2-core CI box (eight DDP
workers, a second node, a race of five trainings, the full-screen cockpit, a minute of
calibration): those are parsed by the real argument parser only (`PARSE_ONLY`).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from repo_paths import REPO, TINY_TOML

from growcockpit.cli import build_parser

# The live run must outlast every command: stages far longer than the test.
LIVE_PLAN = (
    TINY_TOML.read_text()
    .replace("steps = 20\n\n[[stages]]", "steps = 100000\n\n[[stages]]")
    .replace('train = "new"\nsteps = 20', 'train = "new"\nsteps = 100000')
    .replace("system_every_s = 0.5", "system_every_s = 0")
    .replace("every_steps = 20\nkeep = 10", "every_steps = 10000\nkeep = 10")
    + '\n[[stages]]\nname = "all"\nlayers = 4\ntrain = "all"\nsteps = 100000\n'
)
REMAINING = '[[stages]]\nname = "last"\nlayers = 4\ntrain = "all"\nsteps = 50\n'

# Commands that only the argument parser checks, and why they do not run here.
PARSE_ONLY = {
    "--calibrate": "a minute on a loaded 2-core box; tests/e2e/test_cli.py runs it",
    "--nproc-per-node 8": "eight DDP workers on a 2-core box",
    "--nnodes 2": "waits for a second node",
    "growcockpit race ": "a race trains five candidates",
    "growcockpit attach ": "the full-screen cockpit (its own Pilot tests)",
}

ONE_LINE = {  # what the one line of a command's answer looks like
    "ctl": r"^(pause|resume|advance|checkpoint|stop|set_lr|rollback|edit_stages): accepted at step \d+",
    "note": r"^(\(no note\)|text|my-run: note set)$",
    "tag": r"^(\(no tags\)|best, lr-sweep|my-run: tags best, lr-sweep)$",
    "plan validate": r"^PLAN\.toml: ok \(3 stages, 300000 steps\)$",
}


@dataclass(frozen=True)
class Typed:
    line: str  # the README line, as written
    argv: list[str]  # one of its expansions, without the leading `growcockpit`

    def __str__(self) -> str:
        return "growcockpit " + shlex.join(self.argv)


def headless_block() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Headless use\n", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [re.split(r"\s{2,}#", line)[0].strip() for line in block.splitlines() if line.strip()]


def expansions(line: str) -> Iterator[list[str]]:
    """Each command `line` stands for: alternatives a|b, optional [X], [...] left out."""
    choices: list[list[list[str]]] = []
    for token in shlex.split(line)[1:]:
        if token == "[...]":
            continue
        if token.startswith("[") and token.endswith("]"):
            choices.append([[], [token[1:-1]]])
        elif "|" in token:
            choices.append([[alt] for alt in token.split("|")])
        else:
            choices.append([[token]])
    for combo in itertools.product(*choices):
        yield [word for part in combo for word in part]


def typed_commands() -> list[Typed]:
    lines = headless_block()
    assert len(lines) > 15 and all(line.startswith("growcockpit ") for line in lines), lines
    return [Typed(line, argv) for line in lines for argv in expansions(line)]


def executable() -> list[str]:
    """The `growcockpit` script pip installed next to this interpreter (what a user types)."""
    script = Path(sys.executable).with_name("growcockpit")
    found = str(script) if script.exists() else shutil.which("growcockpit")
    assert found, "no `growcockpit` executable: install the package (pip install -e .)"
    return [found]


class Session:
    """The scratch directory, the live run, and the commands typed into it."""

    def __init__(self, cwd: Path, cache: Path) -> None:
        self.cwd = cwd
        self.env = dict(
            os.environ,
            GROWCOCKPIT_CACHE=str(cache),
            HF_HUB_OFFLINE="1",
            OMP_NUM_THREADS="1",
            PYTHONUNBUFFERED="1",
        )
        self.procs: list[subprocess.Popen[str]] = []
        for name in ("PLAN.toml", "A.toml", "B.toml"):
            (cwd / name).write_text(LIVE_PLAN)
        (cwd / "remaining.toml").write_text(REMAINING)

    def argv(self, typed: Typed) -> list[str]:
        step = self.latest_checkpoint("runs/my-run")
        words = {"STEP": str(step), "step-200": f"step-{step}"}
        return executable() + [words.get(word, word) for word in typed.argv]

    def run(self, typed: Typed, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(
            self.argv(typed),
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert "Traceback" not in res.stderr, f"{typed}:\n{res.stderr}"
        assert res.returncode == 0, (
            f"`{typed}` (README: {typed.line}) exit {res.returncode}:\n{res.stderr}"
        )
        return res

    def start(self, typed: Typed) -> subprocess.Popen[str]:
        """A foreground training command, left training."""
        proc = subprocess.Popen(
            self.argv(typed),
            cwd=self.cwd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.procs.append(proc)
        return proc

    def latest_checkpoint(self, run: str) -> int:
        root = self.cwd / run / "checkpoints"
        steps = [int(p.name[5:]) for p in root.glob("step-*")] if root.is_dir() else []
        return max(steps, default=0)

    def wait_training(self, run_dir: Path, proc: subprocess.Popen[str] | None = None) -> None:
        """Until `run_dir` has a checkpoint and answers on its control socket."""
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise AssertionError(f"exited {proc.returncode}: {proc.communicate()}")
            if (run_dir / "control.sock").exists() and any(run_dir.glob("checkpoints/step-*")):
                status = json.loads((run_dir / "status.json").read_text() or "{}")
                if status.get("state") == "running":
                    return
            time.sleep(0.2)
        raise AssertionError(f"{run_dir} never came up")

    def stop(self, run_dir: Path, proc: subprocess.Popen[str] | None) -> None:
        """`ctl RUN stop` (what a user types), then the foreground command's exit."""
        res = subprocess.run(
            [*executable(), "ctl", str(run_dir), "stop"],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert res.returncode == 0, res.stderr
        if proc is not None:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0 and "Traceback" not in err, (proc.returncode, err)

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def one_line(typed: Typed, res: subprocess.CompletedProcess[str]) -> None:
    key = " ".join(typed.argv[:2]) if typed.argv[0] == "plan" else typed.argv[0]
    pattern = ONE_LINE.get(key)
    if pattern is None:
        assert res.stdout.strip(), f"`{typed}` printed nothing"
        return
    lines = res.stdout.splitlines()
    assert len(lines) == 1 and re.search(pattern, lines[0]), f"`{typed}`: {res.stdout!r}"


def test_the_readme_block_is_parsed_whole() -> None:
    commands = typed_commands()
    texts = [str(t) for t in commands]
    assert "growcockpit ctl runs/my-run set_lr 0.5" in texts
    assert "growcockpit ctl runs/my-run rollback STEP" in texts
    assert "growcockpit ctl runs/my-run stop" in texts
    assert "growcockpit status runs/my-run --json" in texts


@pytest.mark.slow  # a live tiny CPU run, driven by the installed executable
def test_every_readme_headless_command_runs(tmp_path: Path, gc_cache: Path) -> None:
    session = Session(tmp_path, gc_cache)
    commands = typed_commands()
    live, after_stop, parse_only = [], [], []
    for typed in commands:
        if any(mark in f"{typed} " for mark in PARSE_ONLY):
            parse_only.append(typed)
        elif typed.argv[0] in ("resume", "compare") or typed.argv[-1:] == ["stop"]:
            after_stop.append(typed)
        else:
            live.append(typed)
    for typed in parse_only:  # the parser accepts it (the real run is out of reach here)
        build_parser().parse_args(typed.argv)
    my_run = tmp_path / "runs" / "my-run"
    try:
        first = live.pop(0)
        assert first.argv[:3] == ["train", "PLAN.toml", "--run-dir"], first
        live_proc = session.start(first)
        session.wait_training(my_run, live_proc)
        for typed in live:
            if typed.argv[0] == "train":
                known = set(tmp_path.glob("runs/*"))
                if "--detach" in typed.argv:
                    res = session.run(typed)
                    assert re.match(r"^started pid \d+: ", res.stdout), res.stdout
                    (new_dir,) = set(tmp_path.glob("runs/*")) - known
                    session.wait_training(new_dir)
                    session.stop(new_dir, None)
                else:
                    proc = session.start(typed)
                    deadline = time.monotonic() + 120
                    while not set(tmp_path.glob("runs/*")) - known:
                        assert time.monotonic() < deadline and proc.poll() is None, typed
                        time.sleep(0.2)
                    (new_dir,) = set(tmp_path.glob("runs/*")) - known
                    session.wait_training(new_dir, proc)
                    session.stop(new_dir, proc)
                continue
            one_line(typed, session.run(typed))
        for typed in after_stop:
            if typed.argv[0] == "compare":
                for name in ("base", "grown"):
                    if not (tmp_path / "runs" / name).exists():
                        shutil.copytree(my_run, tmp_path / "runs" / name, symlinks=True)
                one_line(typed, session.run(typed))
            elif typed.argv[0] == "resume":
                proc = session.start(typed)
                time.sleep(1)  # its status.json says running once it trains again
                session.wait_training(my_run, proc)
                session.stop(my_run, proc)
            else:  # the README's own `ctl runs/my-run stop`
                one_line(typed, session.run(typed))
                out, err = live_proc.communicate(timeout=120)
                assert live_proc.returncode == 0 and "Traceback" not in err, err
    finally:
        session.close()
