"""How a backend process is started: the one recipe the CLI, the cockpit and a race share.

Its own session (it outlives the shell, the cockpit and SSH), no stdin, its
output in a log file opened without following links, glibc's malloc kept
from trimming (a CPU training step spent most of its system time there), and
unbuffered output so the log is live. A setting the user exported wins.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from . import safe_fs

GLIBC_TUNABLES = "glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296"


def backend_env(
    base: dict[str, str] | None = None, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a backend: `base` (default: ours) with the recipe's defaults,
    then `extra` (what a caller sets for its runs: a benchmark's thread count)."""
    env = dict(os.environ if base is None else base)
    env.setdefault("GLIBC_TUNABLES", GLIBC_TUNABLES)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.update(extra or {})
    return env


def growcockpit_command(argv: list[str], python: str | None = None) -> list[str]:
    """`python -m growcockpit ARGV` with this interpreter unless told otherwise."""
    return [python or sys.executable, "-m", "growcockpit", *argv]


def spawn_backend(
    argv: list[str],
    log_path: Path,
    *,
    python: str | None = None,
    cwd: str | None = None,
    new_session: bool = True,
    extra_env: Mapping[str, str] | None = None,
    preexec_fn: Callable[[], None] | None = None,
) -> subprocess.Popen[bytes]:
    """Start `growcockpit ARGV` with its output appended to `log_path` (`extra_env`: what a
    caller sets on top of the recipe's environment, a benchmark's thread count or a race's
    run tag; `preexec_fn`: a race ties its backends to itself, race/supervise.py)."""
    with os.fdopen(safe_fs.open_log(log_path), "ab") as log:
        return subprocess.Popen(
            growcockpit_command(argv, python),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=new_session,
            env=backend_env(extra=extra_env),
            cwd=cwd,
            preexec_fn=preexec_fn,
        )
