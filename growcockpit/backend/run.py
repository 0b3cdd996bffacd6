"""One backend process: set up the run directory, train, and always leave a clean ending.

Whatever happens (normal end, `stop`, SIGTERM, an exception) the run ends
with a `run_finished` event and a final `status.json`, and the control socket
is removed, so a cockpit never shows a run as live when it is not.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import platform
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, cast

import torch

from growcockpit._version import __version__
from growcockpit.backend import startup
from growcockpit.backend.control.liveness import Heartbeat, own_start_time
from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.control.sinks import ConsoleSink, FanOut, MirrorSink
from growcockpit.backend.control.status_writer import StatusWriter
from growcockpit.backend.data.blocks import TokenBlocks, load_blocks
from growcockpit.backend.data.corpus import DataError
from growcockpit.backend.device import prepare_device
from growcockpit.backend.loop.engine import Trainer
from growcockpit.backend.loop.layer_checks import TrainableSetError
from growcockpit.backend.parallel.distributed import DistContext
from growcockpit.backend.parallel.rank_roster import RankRoster
from growcockpit.backend.state.checkpoint import (
    CheckpointError,
    DiskFull,
    is_disk_full,
    remove_partial,
)
from growcockpit.backend.state.init_from import data_spec_for
from growcockpit.backend.state.restore import restored_event
from growcockpit.backend.state.rng import seed_rank
from growcockpit.families import spec_for
from growcockpit.metrics import SystemSampler
from growcockpit.plan import plan_to_dict
from growcockpit.plan.init_from import without_init_from
from growcockpit.plan.source_identity import source_identity
from growcockpit.plan.types import Plan
from growcockpit.protocol import safe_fs
from growcockpit.protocol.control import ControlError, ControlServer
from growcockpit.protocol.eventlog import EventLog
from growcockpit.protocol.events import Error, RunFinished, RunStarted, WarningEvent
from growcockpit.protocol.run_safety import check_run_dir
from growcockpit.protocol.rundir import RunPaths, RunStatus, write_status
from growcockpit.protocol.safe_fs import DIR_MODE, UnsafePath, write_atomic

if TYPE_CHECKING:
    from growcockpit.export import Mirrors


class LaunchError(Exception):
    """The run cannot start; the message names the place and the fix."""


def check_supported(plan: Plan, source: str) -> None:
    world = int(os.environ.get("WORLD_SIZE", "1") or "1")
    for i, stage in enumerate(plan.stages):
        if stage.layer_drop > 0 and world > 1 and plan.distributed.strategy != "fsdp":
            raise LaunchError(
                f"{source}: stages[{i}].layer_drop: skipped blocks leave DDP gradients unreduced; "
                'set [distributed] strategy = "fsdp", remove layer_drop '
                "or train without --nproc-per-node"
            )


def run_training(
    plan: Plan,
    plan_text: str,
    run_dir: Path,
    device: str | None = None,
    resume_from: Path | None = None,
    status_before: bytes | None = None,
) -> int:
    """Train `plan` in `run_dir`; returns the process exit code.

    `status_before`: a resumed run's status.json as it was before this process
    started (`resume` reads it); a refused checkpoint puts it back.

    Under torchrun every rank calls this; only rank 0 writes the run
    directory, listens on the control socket and samples the system.
    """
    spec_for(plan.model.family)  # its modeling code: the last of the imports, and only its own
    entered = time.time()  # launch → here: the imports (reported once the log is open)
    dist = DistContext.from_env(device)
    paths = RunPaths(run_dir)
    main = dist.is_main
    status = RunStatus(
        run_id=paths.root.name,
        plan_name=plan.name,
        state="starting",
        num_stages=len(plan.stages),
        total_steps=plan.total_steps,
        pid=os.getpid(),
        pid_started=own_start_time(),
        started=time.time(),
    )
    events: EventLog | None = None
    control: ControlServer | None = None
    heartbeat: Heartbeat | None = None
    mirrors: Mirrors | None = None
    writer: StatusWriter | None = None
    sink = FanOut()
    kept = _kept_status(status_before) if resume_from is not None else None
    refused = False
    if main:
        try:
            events, control = _open_run_dir(paths, plan_text if resume_from is None else None)
        except (UnsafePath, ControlError) as exc:  # a planted link or a live socket: untouched
            print(f"growcockpit: {exc}", file=sys.stderr)
            dist.close()
            return 2
        write_status(paths.status, status)
        writer = StatusWriter(paths.status, status)  # status.json: a fold of the events
        sink = FanOut(events.append, writer, ConsoleSink(sys.stdout))
    reporter = RunReporter(sink, control)  # other DDP ranks: an empty fan-out, no log
    if main:
        try:
            mirrors = _open_mirrors(plan, paths.root)
            if mirrors is not None:
                sink.add(MirrorSink(mirrors, reporter.warn))
        except Exception as exc:  # the package is missing, or the writer cannot start
            _crash(reporter, None, paths, status, exc)
            print(f"growcockpit: {exc}", file=sys.stderr)
            if control is not None:
                control.close()
            if events is not None:
                events.close()
            dist.close()
            return 2
    device_started = time.perf_counter()
    dev = prepare_device(dist.device(device))
    device_s = time.perf_counter() - device_started
    reporter.emit(
        RunStarted(
            run_id=status.run_id,
            plan=plan_to_dict(plan),
            device=_device_name(dev),
            world_size=dist.world_size,
            pid=os.getpid(),
            versions=_versions(),
            resumed_from=str(resume_from) if resume_from else None,
            data_source=source_identity(plan.data.source),  # compare: one file, one source
        )
    )
    reporter.startup.ended_before("imports", entered - reporter.startup.launched)
    reporter.startup.ended_before("device", device_s)
    if writer is not None:
        heartbeat = Heartbeat(writer.beat)
        heartbeat.start()
        for partial in remove_partial(paths.checkpoints):
            reporter.warn(f"removed {partial.name}: a checkpoint left half-written by a crash")
    sampler = (
        SystemSampler(
            reporter.emit,
            plan.metrics.system_every_s,
            device_index=dev.index if dev.type == "cuda" else None,
        )
        if main and plan.metrics.system_every_s > 0
        else None
    )
    if sampler is not None and sampler.gpus.unavailable:
        where = "" if dev.type == "cuda" else "running on CPU; "
        reporter.emit(
            WarningEvent(message=f"{where}{sampler.gpus.unavailable}: CPU and RAM still reported")
        )
    _quiet_libraries()
    trainer: Trainer | None = None
    roster: RankRoster | None = None
    try:
        startup.defer_signals()
        roster = RankRoster.gather(dist)  # which rank died, should one die (rank_roster.py)
        torch.manual_seed(plan.seed)
        data = _load_data(plan, dist, paths.tokenizer, reporter)
        # a resume takes its weights from the checkpoint, never from init_from's source
        start = plan if resume_from is None else without_init_from(plan)
        trainer = Trainer(start, paths.root, data, reporter, dev, dist)
        if resume_from is not None:
            with reporter.startup.phase("restore"):
                trainer.restore(resume_from)
            reporter.emit(restored_event(trainer.pos, resume_from, None))  # the log may go further
        else:
            seed_rank(plan.seed, dist.rank)  # same weights on every rank, its own dropout
        _install_stop_signals(trainer)
        if startup.deferred.signum is not None:
            trainer.request_stop()
        if sampler is not None:
            sampler.start()
        final = trainer.run()
        dist.barrier()
        return 0 if final in ("completed", "stopped") else 1
    except CheckpointError as exc:
        if resume_from is None:
            _crash(reporter, trainer, paths, status, exc)
        else:  # a refused checkpoint: the run stays as it was, never marked crashed
            refused = True
            _safely(reporter.emit, WarningEvent(message=f"resume refused: {exc}"))
            state = kept[1] if kept is not None else "stopped"
            _safely(reporter.emit, RunFinished(status=state, message=f"resume refused: {exc}"))
        print(f"growcockpit: {exc}", file=sys.stderr)
        return 2
    except (DataError, TrainableSetError) as exc:  # one line, exit 2: the message says why
        _crash(reporter, trainer, paths, status, exc)
        print(f"growcockpit: {exc}", file=sys.stderr)
        return 2
    except startup.StartupInterrupted as exc:
        _safely(reporter.emit, RunFinished(status="stopped", message=str(exc)))
        status.state = "stopped"
        _safely(write_status, paths.status, status)
        return startup.end_interrupted(paths.root, exc)
    except BaseException as exc:
        if is_disk_full(exc, paths.root):
            full = exc if isinstance(exc, DiskFull) else DiskFull(_written_path(exc, paths.root))
            _crash(reporter, trainer, paths, status, full)
            print(f"growcockpit: {full}", file=sys.stderr)
            return 1
        step = trainer.pos.step if trainer is not None else None
        died = roster.died(exc, paths.root, step) if roster is not None and main else None
        exc = died or exc
        _crash(reporter, trainer, paths, status, exc)
        print(
            f"growcockpit: training crashed: {type(exc).__name__}: {exc} (details in events.jsonl)",
            file=sys.stderr,
        )
        return 1
    finally:
        if heartbeat is not None:
            heartbeat.stop()
        if refused and kept is not None:  # after the heartbeat's last write
            _safely(write_atomic, paths.status, kept[0])
        if sampler is not None:
            sampler.stop()
        if mirrors is not None:
            mirrors.close()
        if control is not None:
            control.close()
        if events is not None:
            events.close()
        dist.close()


def _open_run_dir(paths: RunPaths, plan_text: str | None) -> tuple[EventLog, ControlServer]:
    """Rank 0's hold on the run directory: checked, plan frozen, log open, socket bound.

    Everything is checked (`check_run_dir`) before the first write, so a run
    directory with a planted link or special file is refused with nothing in
    it changed, and never marked crashed.
    """
    paths.root.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    check_run_dir(paths.root, writing=True)
    control = ControlServer(paths.control)
    control.start()
    try:
        if plan_text is not None:
            write_atomic(paths.plan, plan_text.encode("utf-8"))
        return EventLog(paths.events), control
    except BaseException:
        control.close()
        raise


def _open_mirrors(plan: Plan, root: Path) -> Mirrors | None:
    """TensorBoard / W&B mirrors of the event log, imported only when [logging] asks for one."""
    log = plan.logging
    if not log.tensorboard and log.wandb == "off":
        return None
    from growcockpit.export import open_mirrors

    return open_mirrors(root, log.tensorboard, log.wandb, root.name, plan_to_dict(plan))


def _load_data(
    plan: Plan, dist: DistContext, run_tokenizer: Path, reporter: RunReporter
) -> TokenBlocks:
    """The run's data, with the run's own tokenizer.

    The tokenizer a run trained is kept in `runs/<id>/tokenizer/` and reused on
    resume: `tokenizers` breaks merge ties in hash order, so retraining on
    another machine (or after the cache is cleared) could give other ids.
    Rank 0 trains/caches first; the other ranks then read its results.
    """
    spec = data_spec_for(plan)
    if run_tokenizer.is_dir():
        spec = dataclasses.replace(spec, tokenizer=str(run_tokenizer))
    what = "preparing the data (tokenizer and tokenized corpus, cached for the others)"
    if not dist.is_main:
        dist.wait_for_main(what)
        return load_blocks(spec, plan.model.family, plan.seed, reporter.startup)
    data = load_blocks(spec, plan.model.family, plan.seed, reporter.startup)
    if not run_tokenizer.is_dir():
        safe_fs.write_dir(run_tokenizer, data.tokenizer.save_pretrained)
    dist.wait_for_main(what)
    return data


def _crash(
    reporter: RunReporter,
    trainer: Trainer | None,
    paths: RunPaths,
    status: RunStatus,
    exc: BaseException,
) -> None:
    """Record the crash as far as the disk allows: a failing write must not hide the cause.

    The events reach status.json through its fold; the last write is direct, in
    case the log could not take them (a full disk)."""
    if trainer is not None:
        trainer.prefetch.close()
    message = str(exc) if isinstance(exc, DiskFull) else f"{type(exc).__name__}: {exc}"
    tb = "" if isinstance(exc, DiskFull) else "".join(traceback.format_exception(exc))[-4000:]
    step = trainer.pos.step if trainer is not None else None
    _safely(reporter.emit, Error(message=message, traceback=tb, step=step))
    _safely(reporter.emit, RunFinished(status="crashed", step=step or 0, message=message))
    status.state = "crashed"
    _safely(write_status, paths.status, status)


def _kept_status(data: bytes | None) -> tuple[bytes, str] | None:
    """status.json as it was before this resume, and its state word (None if unreadable)."""
    import json

    try:
        state = json.loads(data).get("state") if data else None
    except (ValueError, AttributeError, RecursionError):
        return None
    if data is None or state is None:
        return None
    return data, state if state in ("stopped", "crashed", "completed") else "stopped"


def _safely(write: Callable[..., object], *args: object) -> None:
    with contextlib.suppress(Exception):
        write(*args)


def _written_path(exc: BaseException, root: Path) -> str:
    name = getattr(exc, "filename", None)
    return str(name) if name else f"the run directory {root}"


def _quiet_libraries() -> None:
    """Progress bars and one-off library notices would only clutter backend.log.

    `datasets` is not imported here (1.7 s): the corpus reader quiets it where a
    corpus needs it (backend/data/corpus.py), and a plain-text corpus never does."""
    import transformers

    quiet = transformers.utils.logging  # unannotated in transformers
    cast(Callable[[], None], quiet.disable_progress_bar)()
    cast(Callable[[], None], quiet.set_verbosity_error)()


def _install_stop_signals(trainer: Trainer) -> None:
    """SIGTERM/SIGINT/SIGHUP mean `stop`: checkpoint at the next step boundary, then end."""

    def handler(signum: int, frame: FrameType | None) -> None:
        trainer.request_stop()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, handler)


def _device_name(dev: torch.device) -> str:
    if dev.type == "cuda":
        return f"cuda:{torch.cuda.get_device_name(dev)}"
    return f"cpu ({os.cpu_count()} cores, {torch.get_num_threads()} threads)"


def _versions() -> dict[str, str]:
    import transformers

    return {
        "growcockpit": __version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "host": socket.gethostname(),
    }
