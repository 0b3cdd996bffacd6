"""The `step-N/` checkpoint directories of a run, found without torch and without
following a link (shared by choosing a checkpoint and checking its contents)."""

from __future__ import annotations

from pathlib import Path

from growcockpit.protocol import safe_fs

SHARDS_DIR = "shards"
"""Under FSDP, `step-N/shards/`: the weights and optimizer as `torch.distributed.checkpoint`
wrote them, one `__<rank>_0.distcp` file per rank and a `.metadata` index."""


def checkpoint_dirs(root: Path) -> list[Path]:
    """`step-N` directories holding a `state.pt`, oldest first."""
    try:
        if not safe_fs.check_dir(root):
            return []
    except safe_fs.UnsafePath:  # a link is never listed through
        return []
    found = [
        p
        for p in root.glob("step-*")
        if p.name[5:].isdigit() and len(p.name) < 25 and _real_checkpoint(p)
    ]
    return sorted(found, key=lambda p: int(p.name[5:]))


def _real_checkpoint(path: Path) -> bool:
    """A real `step-N/` directory with a regular `state.pt`: a planted link or FIFO is passed
    over, never opened (the CLI's `check_run_dir` names it before a resume)."""
    try:
        return safe_fs.check_dir(path) and safe_fs.check_file(path / "state.pt")
    except safe_fs.UnsafePath:
        return False


def step_of(path: Path) -> int:
    return int(path.name[5:])
