"""Random run-directory contents (files of every type, random bytes, links) fed to the readers.

`status`, `resume` (up to where it refuses), Home's catalog and attach's check
must each answer in bounded time with at most one line, exit 0 or 2, never a
traceback, and never change the file a planted link points to. `plan.toml` is at
times a valid plan and `state.pt` a real torch archive of random plain data (the
keys a checkpoint has, values of any type), so `resume` gets past the plan and
the archive check into the checkpoint's content checks.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
import threading
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from repo_paths import TINY_TOML

from growcockpit.cli import main
from growcockpit.protocol.run_safety import check_run_dir
from growcockpit.protocol.safe_fs import RunDirError
from growcockpit.session.catalog import list_runs

NAMES = (
    "status.json",
    "events.jsonl",
    "plan.toml",
    "control.sock",
    "backend.log",
    "checkpoints",
    "final",
    "checkpoints/step-3",
    "checkpoints/step-3/state.pt",
)
VICTIM = b"the user's own file\n"
POSITION_KEYS = ("step", "stage_index", "stage_entered", "plan", "cpu_threads", "lr_scale", "x")

status_like = st.one_of(
    st.binary(max_size=200),
    st.builds(
        lambda state, pid: (f'{{"state": "{state}", "pid": {pid}, "step": 3}}').encode(),
        st.sampled_from(["running", "stopped", "completed", "crashed", "x"]),
        st.integers(-5, 1 << 23),
    ),
)
entry = st.one_of(
    st.just(("absent", b"")),
    st.tuples(st.just("file"), status_like),
    st.just(("fifo", b"")),
    st.just(("link", b"")),
    st.just(("dangling", b"")),
    st.just(("dir", b"")),
)

plain = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(1 << 70), 1 << 70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=8),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
tensor = st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=6)
checkpoint_data = st.fixed_dictionaries(
    {
        "config": plain,
        "model": st.one_of(plain, st.dictionaries(st.text(max_size=8), tensor, max_size=4)),
        "position": st.one_of(plain, st.dictionaries(st.sampled_from(POSITION_KEYS), plain)),
        "rng": plain,
    },
    optional={"optimizer": plain, "levels": plain},
)
ENTRIES = {
    "plan.toml": st.one_of(entry, st.just(("file", TINY_TOML.read_bytes()))),
    "checkpoints/step-3/state.pt": st.one_of(
        entry, st.builds(lambda data: ("torch", data), checkpoint_data)
    ),
}


def _torch_save(path: Path, data: dict[str, object]) -> None:
    import torch

    if isinstance(data["model"], dict):
        data["model"] = {
            k: torch.tensor(v, dtype=torch.float32) if isinstance(v, list) else v
            for k, v in data["model"].items()
        }
    torch.save(data, path)


def _build(root: Path, victim: Path, layout: dict[str, tuple[str, bytes]]) -> None:
    for name in NAMES:
        kind, data = layout[name]
        path = root / name
        if not path.parent.is_dir() or path.parent.is_symlink():
            continue  # its directory is not a real one here
        if kind == "file":
            path.write_bytes(data)
        elif kind == "torch":
            _torch_save(path, data)  # type: ignore[arg-type]
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "link":
            path.symlink_to(victim)
        elif kind == "dangling":
            path.symlink_to(root / "nowhere" / "control.sock")
        elif kind == "dir":
            path.mkdir()


def _bounded(fn, seconds: float = 20.0):  # type: ignore[no-untyped-def]
    out: list[object] = []
    err = io.StringIO()

    def call() -> None:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                out.append(fn())
            except RunDirError as exc:
                out.append(exc)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"blocked for {seconds} s"
    assert out, "raised"  # anything but RunDirError propagates as a failure in the thread
    return out[0], err.getvalue()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout=st.fixed_dictionaries({name: ENTRIES.get(name, entry) for name in NAMES}))
def test_random_run_dirs_never_hang_or_trace(layout: dict[str, tuple[str, bytes]]) -> None:
    top = Path(tempfile.mkdtemp(prefix="gc-fuzz-"))
    try:
        victim = top / "victim"
        victim.write_bytes(VICTIM)
        run = top / "runs" / "r"
        run.mkdir(parents=True)
        _build(run, victim, layout)
        healthy = top / "runs" / "healthy"
        healthy.mkdir()
        (healthy / "status.json").write_text('{"run_id": "healthy", "state": "stopped"}')
        for argv in (["status", str(run)], ["status", str(run), "--json"], ["resume", str(run)]):
            code, err = _bounded(lambda argv=argv: main(argv))
            assert code in (0, 2), (argv, code, err)
            assert err.count("\n") <= 1 and "Traceback" not in err, (argv, err)
        runs, _ = _bounded(lambda: list_runs(top / "runs"))
        assert "healthy" in [e.name for e in runs]
        _bounded(lambda: check_run_dir(run, writing=False))
        assert victim.read_bytes() == VICTIM
    finally:
        shutil.rmtree(top, ignore_errors=True)
