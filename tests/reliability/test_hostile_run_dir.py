"""A run directory is untrusted input: planted links and special files are refused, never used.

Each case builds a hostile run directory in tmp (a symlink to a "victim" file
or directory outside it, a FIFO) and checks that the CLI answers with one line
and exit 2 naming the path, within a timeout (a FIFO must never block), and
that the victim is unchanged.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from repo_paths import TINY_TOML

from growcockpit.protocol import ControlError, ControlServer, EventLog, EventTail
from growcockpit.protocol.rundir import RunStatus, write_status
from growcockpit.protocol.safe_fs import UnsafePath, read_bytes

TIMEOUT = 60
VICTIM_TEXT = "export PATH=/usr/bin  # the user's shell rc\n"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.rc"
    path.write_text(VICTIM_TEXT)
    return path


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A stopped run as a backend leaves it (the checkpoint is never reached by a refusal)."""
    root = tmp_path / "runs" / "r1"
    (root / "checkpoints" / "step-0").mkdir(parents=True)
    (root / "checkpoints" / "step-0" / "state.pt").write_bytes(b"PK not really")
    (root / "plan.toml").write_text(TINY_TOML.read_text())
    EventLog(root / "events.jsonl").close()
    write_status(root / "status.json", RunStatus(run_id="r1", state="stopped", num_stages=2))
    return root


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`growcockpit ARGS` in a subprocess: a hang fails the test instead of stalling it."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run(
        [sys.executable, "-m", "growcockpit", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env,
    )


def refused(res: subprocess.CompletedProcess[str], path: Path) -> str:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    err = res.stderr
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert str(path) in err, err
    return err


def plant_link(run: Path, name: str, target: Path) -> Path:
    path = run / name
    if path.is_dir() and not path.is_symlink():
        for child in sorted(path.rglob("*"), reverse=True):
            child.rmdir() if child.is_dir() else child.unlink()
        path.rmdir()
    elif os.path.lexists(path):
        path.unlink()
    path.symlink_to(target)
    return path


@pytest.mark.parametrize("name", ["control.sock", "events.jsonl", "status.json", "plan.toml"])
def test_resume_refuses_a_file_linked_out_and_leaves_the_target(
    run: Path, victim: Path, name: str
) -> None:
    link = plant_link(run, name, victim)
    err = refused(cli("resume", str(run)), link)
    assert "symbolic link" in err
    assert victim.read_text() == VICTIM_TEXT
    assert link.is_symlink()


@pytest.mark.parametrize("name", ["final", "checkpoints", "tokenizer"])
def test_resume_refuses_a_directory_linked_out(run: Path, tmp_path: Path, name: str) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    link = plant_link(run, name, elsewhere)
    refused(cli("resume", str(run)), link)
    assert [p.name for p in elsewhere.iterdir()] == ["keep.txt"]


def test_a_link_inside_final_is_refused(run: Path, victim: Path) -> None:
    (run / "final").mkdir()
    link = run / "final" / "model.safetensors"
    link.symlink_to(victim)
    refused(cli("resume", str(run)), link)
    assert victim.read_text() == VICTIM_TEXT


def test_train_into_a_run_dir_with_a_linked_log(run: Path, victim: Path) -> None:
    link = plant_link(run, "backend.log", victim)
    refused(cli("train", str(TINY_TOML), "--run-dir", str(run), "--detach"), link)
    assert victim.read_text() == VICTIM_TEXT


def test_fifo_status_json_answers_at_once(run: Path) -> None:
    (run / "status.json").unlink()
    os.mkfifo(run / "status.json")
    start = time.monotonic()
    err = refused(cli("status", str(run)), run / "status.json")
    assert "FIFO" in err
    refused(cli("resume", str(run)), run / "status.json")
    assert time.monotonic() - start < TIMEOUT


@pytest.mark.parametrize("where", ["checkpoints/step-0/state.pt", "events.jsonl"])
def test_fifo_inside_the_run_never_blocks_resume(run: Path, where: str) -> None:
    (run / where).unlink()
    os.mkfifo(run / where)
    err = refused(cli("resume", str(run)), run / where)
    assert "FIFO" in err


def test_status_with_a_fifo_event_log(run: Path) -> None:
    (run / "events.jsonl").unlink()
    os.mkfifo(run / "events.jsonl")
    refused(cli("status", str(run)), run / "events.jsonl")


# -- the control socket's stale-file cleanup ---------------------------------------------


def test_stale_socket_cleanup_never_deletes_a_links_target(run: Path, victim: Path) -> None:
    (run / "control.sock").symlink_to(victim)
    with pytest.raises(ControlError, match="symbolic link") as info:
        ControlServer(run / "control.sock").start()
    assert "\n" not in str(info.value)
    assert victim.read_text() == VICTIM_TEXT


def test_a_link_to_a_socket_that_is_not_in_a_private_dir_is_left(run: Path, tmp_path: Path) -> None:
    """Our own socket, but not one we made for this run: the link does not prove it is ours."""
    other = tmp_path / "other.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(other))  # bound, never listening: looks stale
    (run / "control.sock").symlink_to(other)
    with pytest.raises(ControlError):
        ControlServer(run / "control.sock").start()
    assert other.is_socket()


def test_a_dangling_link_is_cleared_and_the_server_starts(run: Path, tmp_path: Path) -> None:
    (run / "control.sock").symlink_to(tmp_path / "growcockpit-gone" / "control.sock")
    server = ControlServer(run / "control.sock")
    server.start()
    try:
        assert (run / "control.sock").is_socket()
    finally:
        server.close()


def test_a_fifo_as_the_socket_is_refused(run: Path) -> None:
    os.mkfifo(run / "control.sock")
    with pytest.raises(ControlError, match="FIFO"):
        ControlServer(run / "control.sock").start()
    assert (run / "control.sock").exists()


# -- the protocol's readers and writers ----------------------------------------------------


def test_event_log_never_appends_through_a_link(tmp_path: Path, victim: Path) -> None:
    (tmp_path / "events.jsonl").symlink_to(victim)
    with pytest.raises(UnsafePath, match="symbolic link"):
        EventLog(tmp_path / "events.jsonl")
    assert victim.read_text() == VICTIM_TEXT


def test_status_replace_never_writes_through_a_link(tmp_path: Path, victim: Path) -> None:
    (tmp_path / "status.json").symlink_to(victim)
    with pytest.raises(UnsafePath):
        write_status(tmp_path / "status.json", RunStatus())
    assert victim.read_text() == VICTIM_TEXT


def _within(seconds: float, fn: Callable[[], object]) -> object:
    """fn() in a thread; fails (instead of hanging the suite) when it does not return in time."""
    import threading

    box: list[object] = []
    thread = threading.Thread(target=lambda: box.append(_catch(fn)), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{fn} blocked for {seconds} s"
    return box[0]


def _catch(fn: Callable[[], object]) -> object:
    try:
        return fn()
    except Exception as exc:
        return exc


def test_tail_and_capped_reads_refuse_special_files(tmp_path: Path) -> None:
    fifo = tmp_path / "events.jsonl"
    os.mkfifo(fifo)
    assert isinstance(_within(5, EventTail(fifo).read_new), UnsafePath)
    assert isinstance(_within(5, lambda: read_bytes(fifo, 100)), UnsafePath)
    assert isinstance(_within(5, lambda: read_bytes(Path("/dev/zero"), 100)), UnsafePath)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 1000)
    with pytest.raises(UnsafePath, match="1000 bytes, over the 100-byte limit"):
        read_bytes(big, 100)


def test_home_lists_a_healthy_run_beside_a_hostile_sibling(run: Path) -> None:
    hostile = run.parent / "r0-hostile"
    hostile.mkdir()
    os.mkfifo(hostile / "status.json")
    os.mkfifo(hostile / "events.jsonl")
    code = (
        "import sys; from growcockpit.session.catalog import list_runs; "
        "print(' '.join(e.name for e in list_runs(sys.argv[1])))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, str(run.parent)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert res.returncode == 0, res.stderr
    assert "r1" in res.stdout.split()


# -- end to end: a real run, copied, made hostile, resumed -----------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, gc_cache: Path) -> Path:
    from run_fixtures import growcockpit, tiny_plan

    top = tmp_path_factory.mktemp("trained")
    plan = top / "plan.toml"
    plan.write_text(tiny_plan(steps=(2, 2), every_steps=2))
    res = growcockpit("train", str(plan), "--run-dir", str(top / "run"), cache=gc_cache)
    assert res.returncode == 0, res.stderr
    return top / "run"


def _copy(trained: Path, tmp_path: Path) -> Path:
    import shutil

    run = tmp_path / "runs" / "copy"
    shutil.copytree(trained, run, symlinks=True)
    return run


@pytest.mark.slow
@pytest.mark.parametrize("name", ["control.sock", "events.jsonl", "backend.log", "final"])
def test_resume_of_a_real_run_with_a_planted_link(
    trained: Path, tmp_path: Path, victim: Path, gc_cache: Path, name: str
) -> None:
    from run_fixtures import growcockpit

    run = _copy(trained, tmp_path)
    target = victim
    if name == "final":
        target = tmp_path / "victim-dir"
        target.mkdir()
    link = plant_link(run, name, target)
    status_before = (run / "status.json").read_bytes()
    res = growcockpit("resume", str(run), "--force", cache=gc_cache, timeout=TIMEOUT)
    refused(res, link)
    assert victim.read_text() == VICTIM_TEXT
    assert list(tmp_path.glob("victim-dir/*")) == []
    assert (run / "status.json").read_bytes() == status_before  # not marked crashed


@pytest.mark.slow
def test_files_of_a_run_are_the_owners_alone(trained: Path, tmp_path: Path, gc_cache: Path) -> None:
    """One policy: files 0600 and directories 0700, checkpoints as the final model."""
    import stat

    from run_fixtures import growcockpit

    run = _copy(trained, tmp_path)
    res = growcockpit("resume", str(run), "--force", cache=gc_cache)
    assert res.returncode == 0, res.stderr
    for path in [
        run / "checkpoints",
        *(run / "checkpoints").rglob("*"),
        *(run / "final").rglob("*"),
    ]:
        want = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(path.stat().st_mode) == want, path
    assert stat.S_IMODE((run / "final").stat().st_mode) == 0o700
    assert (run / "final" / "config.json").is_file()


# -- export on a damaged log -----------------------------------------------------------


def test_export_skips_lines_whose_fields_lie(run: Path, tmp_path: Path) -> None:
    with open(run / "events.jsonl", "a") as fh:
        fh.write('{"seq": 1, "t": 1.0, "type": "step", "step": 1, "loss": 2.5}\n')
        fh.write('{"seq": 2, "t": 2.0, "type": "step", "step": "x", "loss": [1]}\n')
        fh.write('{"seq": 3, "t": "late", "type": "eval", "step": 5, "val_loss": 1.0}\n')
    res = cli("export", str(run), "--tensorboard", str(tmp_path / "tb"))
    assert res.returncode == 0, res.stderr
    assert "wrote 1 events" in res.stdout and "2 unreadable lines skipped" in res.stdout


def test_export_from_a_fifo_or_into_a_file_is_one_line(run: Path, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    refused(cli("export", str(run), "--tensorboard", str(tmp_path / "a-file")), tmp_path / "a-file")
    (run / "events.jsonl").unlink()
    os.mkfifo(run / "events.jsonl")
    res = cli("export", str(run), "--tensorboard", str(tmp_path / "tb"))
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
