"""A warm `python -m growcockpit`: one interpreter imports torch, transformers and the
backend once; every command then runs in a fresh fork of it.

Importing the backend costs seconds of CPU (torch and transformers); a test that trains
a 40-step tiny model in a subprocess pays that more than the training. The fork is a new
process like any other (its own pid, globals, RNGs, file descriptors, exit code; stdout
and stderr captured apart), only without the imports. What it cannot show is an import
that fails from a cold start: the tests that run the plain `python -m growcockpit` still
do. Each command runs with OMP_NUM_THREADS=1 (the zygote is started so; torch reads it
once): tiny models gain nothing from intra-op threads, and spinning threads on a loaded
2-core box cost more than the training.

Protocol (one JSON line each way on stdin/stdout): {"argv", "env", "cwd", "out", "err"}
→ {"pid"} when forked, then {"rc"} when the command has ended.
"""

from __future__ import annotations

import json
import os
import sys


def _child(req: dict, reply_fd: int, request_fd: int) -> None:  # type: ignore[type-arg]
    import atexit
    import contextlib
    import io
    import runpy
    import threading
    import traceback

    os.close(reply_fd)
    os.close(request_fd)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    for fd, path in ((1, req["out"]), (2, req["err"])):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), write_through=True, errors="backslashreplace"
    )
    sys.argv = ["growcockpit", *req["argv"]]
    rc = 0
    try:
        runpy.run_module("growcockpit", run_name="__main__", alter_sys=True)
    except SystemExit as exc:  # as the interpreter maps it
        code = exc.code
        if code is None:
            rc = 0
        elif isinstance(code, int):
            rc = code
        else:
            print(code, file=sys.stderr)
            rc = 1
    except BaseException:
        traceback.print_exc()
        rc = 1
    # what the interpreter does on the way out: join non-daemon threads, run atexit
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(rc & 0xFF)


def main() -> None:
    # the protocol keeps its own descriptors; stray prints of the imports go nowhere
    reply_fd = os.dup(1)
    request_fd = os.dup(0)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    import growcockpit.backend.run  # noqa: F401  (torch, transformers, every family)
    import growcockpit.cli  # noqa: F401

    requests = os.fdopen(request_fd, "r")
    reply = os.fdopen(reply_fd, "w", buffering=1)
    reply.write(json.dumps({"ready": True}) + "\n")
    for line in requests:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(req, reply_fd, request_fd)
        reply.write(json.dumps({"pid": pid}) + "\n")
        _, status = os.waitpid(pid, 0)
        rc = os.waitstatus_to_exitcode(status)
        reply.write(json.dumps({"rc": rc}) + "\n")


if __name__ == "__main__":
    main()
