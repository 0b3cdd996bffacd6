"""The end of a run: the final model written where transformers can load it, and `run_finished`.

Kept out of the step loop because it is the one place that talks to the file system,
the other ranks and the event sink at once, and a stopped run ends exactly like a
completed one here (only the status differs).
"""

from __future__ import annotations

from pathlib import Path

from torch import nn
from transformers import PreTrainedTokenizerBase

from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.parallel.distributed import DistContext
from growcockpit.grow.model_parts import part
from growcockpit.protocol import safe_fs
from growcockpit.protocol.events import RunFinished


def finish_run(
    model: nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    final_dir: Path,
    dist: DistContext,
    report: RunReporter,
    status: str,
    step: int,
) -> None:
    """Save model and tokenizer to `final_dir` (rank 0), compare the ranks' weights, say so.

    Ranks that end with different weights would mean DDP drifted; the digests go into
    the event so a test (and a user) can check them.
    """
    if dist.is_main:

        def fill(folder: Path) -> None:
            part(model, "save_pretrained")(folder)
            tokenizer.save_pretrained(folder)

        safe_fs.write_dir(final_dir, fill)  # never into a link planted as final/ or inside it
    digests = dist.gather_digests(model)
    if digests and len(set(digests)) > 1:
        report.warn(f"ranks ended with different weights ({len(set(digests))} distinct digests)")
    report.emit(
        RunFinished(
            status=status, step=step, final_path=str(final_dir), rank_weight_digests=digests
        )
    )
