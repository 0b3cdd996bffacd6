"""`growcockpit race`: race candidate plans on a short budget and continue the winner.

Imports no torch: the candidates train as `growcockpit` subprocesses (growcockpit.race).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from growcockpit.cli.common import EXIT_FAILED, EXIT_OK, Subparsers, UserError, add_set_arg


def add_parsers(sub: Subparsers) -> None:
    r = sub.add_parser(
        "race",
        help="race plans (× --vary choices, plus the full-depth baseline) on a short budget; "
        "continue the winner",
    )
    r.add_argument("plans", nargs="*", type=Path, metavar="PLAN")
    r.add_argument(
        "--vary",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="a plan key's choices, e.g. optim.lr=1e-3,2e-3 or stages.0.steps=100,200 (repeatable)",
    )
    r.add_argument(
        "--budget-fraction",
        type=float,
        default=0.1,
        help="the last rung's compute as a fraction of the full budget (default 0.1)",
    )
    add_set_arg(r)  # shared by every candidate, as `train --set`
    r.add_argument("--keep", type=int, default=1, help="winners continued to the full budget")
    r.add_argument("--eta", type=int, default=2, help="1/eta of the candidates go on per rung")
    r.add_argument("--seeds", default="0", help="seeds per candidate, e.g. 0,1 (default 0)")
    r.add_argument("--race-dir", type=Path, help="default: races/<first plan>-<time>")
    r.add_argument("--json", type=Path, metavar="FILE", help="write the result as JSON")
    r.add_argument("--workers", type=int, default=1, help="worker processes sharing the race")
    r.add_argument(
        "--no-finish", action="store_true", help="stop after the race (no full-budget continuation)"
    )
    r.add_argument(
        "--control",
        action="store_true",
        help="add each growth plan's control: the final model at full depth from the start, "
        "training only the layers its last growth stage trains (is it the growth, or the "
        "reduced trainable set?)",
    )
    r.add_argument(
        "--no-depth-controls",
        action="store_true",
        help="leave out the fixed-size controls (the final model at depth 1 and half depth, "
        "one stage, equal compute) that race by default to say whether depth pays",
    )
    r.add_argument(
        "--no-short-controls",
        action="store_true",
        help="leave out the full-depth short-schedule controls (the baseline's model on 1/2 "
        "and 1/4 of its steps, its schedule completed) that race by default: a growth "
        "winner's speedup is claimed only where it beats them too",
    )
    r.add_argument(
        "--metric",
        choices=("val_loss", "accuracy"),
        default="val_loss",
        help="what the winner's growth claim is measured on (accuracy: exact match, higher "
        "is better, where the task reports it; the race still ranks by validation loss)",
    )
    r.add_argument(
        "--target-value",
        type=float,
        metavar="V",
        help="the --metric value to reach (default: the baseline's; 0.95 for 95 %% accuracy)",
    )
    r.add_argument(
        "--join", action="store_true", help="join the race in --race-dir as one more worker"
    )
    r.add_argument(
        "--continue-winner",
        action="store_true",
        help="finish the race in --race-dir if need be, then continue its winner(s) to the "
        "full budget (also for a race started with --no-finish)",
    )
    r.set_defaults(func=cmd_race)


def _seeds(text: str) -> list[int]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or not all(p.isdigit() and len(p) < 10 for p in parts):
        raise UserError(f"--seeds {text[:40]}: give whole numbers such as 0,1,2")
    return [int(p) for p in parts]


def _spec(args: argparse.Namespace, race_dir: Path) -> object:
    from growcockpit.race import RaceError, build_race
    from growcockpit.race.race_dir import RaceDirError
    from growcockpit.race.spec_file import load_spec, save_spec

    try:
        old = load_spec(race_dir)
    except RaceDirError as exc:
        raise UserError(str(exc)) from None
    if not args.plans:
        if old is None:
            raise UserError("give PLAN files, or a --race-dir holding a race to resume or join")
        return old
    value = args.target_value
    if args.metric == "accuracy" and value is not None and not 0 < value <= 1:
        raise UserError(
            f"--target-value {args.target_value:g}: an accuracy target is in (0, 1]; 0.95 for 95 %"
        )
    if args.keep < 1 or args.eta < 2 or args.workers < 1:
        raise UserError("--keep and --workers must be ≥ 1, --eta ≥ 2")
    try:
        build = dict(
            budget_fraction=args.budget_fraction,
            eta=args.eta,
            keep=args.keep,
            finish=not args.no_finish,
            control=args.control,
            depth_controls=not args.no_depth_controls,
            short_controls=not args.no_short_controls,
            metric=args.metric,
            target_value=args.target_value,
        )
        spec = build_race(list(args.plans), args.vary, _seeds(args.seeds), race_dir,
                          write=False, fixed=tuple(args.sets), **build)  # fmt: skip
        if old is not None:
            if old.to_json() != spec.to_json():
                raise UserError(
                    f"{race_dir}: holds a different race; rerun it with its own arguments "
                    f"(or just --race-dir {race_dir}), or choose another --race-dir"
                )
            return old
        spec = build_race(
            list(args.plans),
            args.vary,
            _seeds(args.seeds),
            race_dir,
            fixed=tuple(args.sets),
            **build,
        )
        save_spec(race_dir, spec)
    except (RaceError, RaceDirError) as exc:
        raise UserError(str(exc)) from None
    return spec


def cmd_race(args: argparse.Namespace) -> int:
    from growcockpit.race.race_dir import RaceDirError

    try:
        return _race(args)
    except RaceDirError as exc:  # a planted or damaged entry of the race directory
        raise UserError(str(exc)) from None


def _race(args: argparse.Namespace) -> int:
    import dataclasses

    from growcockpit.race.candidates import RaceSpec
    from growcockpit.race.presence import RaceStopped, clear_stop
    from growcockpit.race.report import format_result, race_result
    from growcockpit.race.study import open_study, work
    from growcockpit.race.trust import caveat

    race_dir: Path | None = args.race_dir
    if race_dir is None:
        if args.join or not args.plans:
            raise UserError("--race-dir DIR: the race to resume or join")
        race_dir = Path("races") / f"{args.plans[0].stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    spec = _spec(args, race_dir)
    assert isinstance(spec, RaceSpec)
    if args.continue_winner:  # the stored race is unchanged: a re-run goes on as it was
        spec = dataclasses.replace(spec, finish=True)
    if not args.join:
        clear_stop(race_dir)  # running the race again goes on where a stop left it
    print(f"race directory: {race_dir} ({len(spec.candidates)} candidates, "
          f"{len(spec.rungs)} rungs)", flush=True)  # fmt: skip
    join = [sys.executable, "-m", "growcockpit", "race", "--join", "--race-dir", str(race_dir)]
    join += ["--continue-winner"] if args.continue_winner else []
    helpers = [subprocess.Popen(join) for _ in range(args.workers - 1)]
    stopped = False
    try:
        work(spec, race_dir, say=lambda line: print(line, flush=True))
    except RaceStopped:
        stopped = True
    finally:
        for proc in helpers:
            proc.wait()
    if args.join:
        return EXIT_OK
    result = race_result(spec, open_study(race_dir))
    print(format_result(result))
    warning = caveat(spec.budget_fraction)
    if warning is not None and result.winner is not None:
        print(warning)
    if stopped:
        print(f"race stopped; `growcockpit race --race-dir {race_dir}` goes on where it stopped")
    if args.json is not None:
        args.json.write_text(result.to_json() + "\n")
    failed = any(r.state == "failed" for r in result.rows)
    return EXIT_FAILED if failed else EXIT_OK
