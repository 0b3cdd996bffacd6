"""How large a checkpoint of this plan can honestly be, so a planted giant is refused unread.

`torch.load` reads the whole `state.pt` into memory before anything in it can be
checked: a multi-GB file planted as `checkpoints/step-N/state.pt` (copied, downloaded)
would exhaust RAM on `resume` or `rollback`. Its size is known from one `lstat`, and the
plan says how big the model can get, so the file is refused with one line before loading.

The cap is generous: what a checkpoint holds is the fp32 weights (4 bytes a parameter)
and AdamW's two moments (8 more), plus grown-model levels and RNG states. The cap allows
BYTES_PER_PARAM = 64 bytes for each parameter of the plan's largest model (over 5× that),
counted with the vocabulary the plan trains ("train:N"), or at least MIN_VOCAB when the
tokenizer comes from a path, a hub name or an `init_from` source (its size is not in the
plan), plus a fixed FIXED_BYTES for everything else.
A checkpoint this tool wrote is far below it; a file over it is not one of this run's.
"""

from __future__ import annotations

from growcockpit.plan.cost import block_params, vocab_size
from growcockpit.plan.types import Plan

BYTES_PER_PARAM = 64
MIN_VOCAB = 1 << 18
FIXED_BYTES = 64 << 20


def max_params(plan: Plan) -> int:
    """An upper bound on the parameters of the plan's largest model: every block at full
    width, norms and biases counted generously, token and position tables, an untied head."""
    m = plan.model
    d = m.hidden_size
    layers = max([m.final_layers, *(s.layers for s in plan.stages)])
    block = block_params(m) + 16 * d + 2 * m.intermediate_size
    known = plan.data.tokenizer.startswith("train:") and m.init_from is None
    vocab = vocab_size(plan) if known else max(vocab_size(plan), MIN_VOCAB)
    return layers * block + 2 * vocab * d + m.max_seq_len * d + 4 * d


def checkpoint_cap(plan: Plan) -> int:
    """The largest `state.pt` a checkpoint of `plan` may be, in bytes."""
    return BYTES_PER_PARAM * max_params(plan) + FIXED_BYTES


def cap_problem(size: int, plan: Plan) -> str | None:
    """None when `size` fits; else the end of a one-line refusal naming the cap."""
    cap = checkpoint_cap(plan)
    if size <= cap:
        return None
    return (
        f"{size:,} bytes, over the {cap:,}-byte cap for this run's model "
        f"({BYTES_PER_PARAM} bytes × at most {max_params(plan):,} parameters + "
        f"{FIXED_BYTES >> 20} MiB, BYTES_PER_PARAM); not a checkpoint of this run: resume "
        "from an earlier one (`--from=step-N`) or delete it"
    )
