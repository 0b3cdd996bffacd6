"""What each stage of a plan holds, counted: parameters per part, the trainable share,
which blocks keep activations, the micro-batch's tokens.

The shared ground of the memory estimate (plan/memory.py) and the communication model
(plan/comm.py), so the two can never disagree on what trains. Parameter counts follow
the families' transformers models exactly (biases and norms included):

- BERT block: 4w² + 2w·F + 9w + F (Q, K, V, O and the two FFN matrices with their
  biases, two LayerNorms); embeddings V·w + P·w + 2w (token types) + 2w (LayerNorm);
  own head w² + 3w + V (the MLM transform, its LayerNorm, the decoder bias; the decoder
  weight is the token table).
- GPT-2 block: the same 4w² + 2w·F + 9w + F; embeddings V·w + P·w; own head 2w (ln_f;
  the LM head is the token table).
- Llama block: 2w² + 2w·kv + 3w·F + 2w (no biases, two RMSNorms; kv = w × kv heads /
  heads); embeddings V·w; own head w (the final norm) + V·w when the head is untied.

w is the stage's width, F the FFN width at that width, V the vocabulary
(plan/cost.py `vocab_size`), P `max_seq_len`.

Activations kept for the backward, per token of one block, in elements of the compute
dtype (`ACTIVATION_ELEMENTS`: a·w + b·kv + c·F): the tensors autograd saves, each
counted once, with fused attention (SDPA keeps no seq² score matrix). BERT and GPT-2 keep
7w + 2kv + 2F (norm inputs and outputs, Q, K, V, the attention output and its
projection's input, the FFN's two F-wide tensors), plus one byte per element of each of
two dropout masks when dropout > 0; Llama keeps 7w + 2kv + 4F (SwiGLU keeps four F-wide
tensors). Only blocks that run with autograd keep them: the trainable ones, frozen blocks
above the lowest trainable one, and every block when the embeddings train (the frozen
bottom otherwise runs under no_grad, backend/loop/forward.py). The head keeps its logits
at the compute dtype, their fp32 copy when that dtype is narrower, and the fp32
log-probabilities, for the positions it scores (a masked LM: × mlm_probability).
Measured on CPU in fp32 (bench/fsdp_memory.py, the bytes autograd saves): within a few
per cent of this count for Llama. The embedding output, the
transient forward of a frozen block and allocator slack are not counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from growcockpit.plan.cost import head_is_tied, vocab_size
from growcockpit.plan.families import family_facts
from growcockpit.plan.shapes import resolve_shapes
from growcockpit.plan.types import ModelSpec, Plan


@dataclass(frozen=True)
class PartSizes:
    """Parameters of one block, of the embeddings, and of the head's own (untied) part."""

    block: int
    embeddings: int
    head: int


def _bert(m: ModelSpec, w: int, f: int, kv: int, vocab: int) -> PartSizes:
    block = 4 * w * w + 2 * w * f + 9 * w + f
    return PartSizes(block, vocab * w + m.max_seq_len * w + 4 * w, w * w + 3 * w + vocab)


def _gpt2(m: ModelSpec, w: int, f: int, kv: int, vocab: int) -> PartSizes:
    block = 4 * w * w + 2 * w * f + 9 * w + f
    return PartSizes(block, vocab * w + m.max_seq_len * w, 2 * w)


def _llama(m: ModelSpec, w: int, f: int, kv: int, vocab: int) -> PartSizes:
    block = 2 * w * w + 2 * w * kv + 3 * w * f + 2 * w
    return PartSizes(block, vocab * w, w + (0 if head_is_tied(m) else vocab * w))


PARAMETER_COUNTS: dict[str, Callable[[ModelSpec, int, int, int, int], PartSizes]] = {
    "bert": _bert,
    "gpt2": _gpt2,
    "llama": _llama,
}
# (a, b, c): elements a·w + b·kv + c·F kept per token and block (module doc)
ACTIVATION_ELEMENTS: dict[str, tuple[int, int, int]] = {
    "bert": (7, 2, 2),
    "gpt2": (7, 2, 2),
    "llama": (7, 2, 4),
}
DROPOUT_MASKS = 2  # one-byte masks of w elements per token and block when dropout > 0


def part_sizes(model: ModelSpec, width: int | None = None, vocab: int = 0) -> PartSizes:
    """Parameter counts at `width` (default: full) for a vocabulary of `vocab` tokens."""
    d = model.hidden_size
    w = width or d
    if d <= 0 or model.num_heads <= 0:
        return PartSizes(0, 0, 0)
    f = model.intermediate_size * w // d
    kv = w * model.kv_heads // model.num_heads
    return PARAMETER_COUNTS.get(model.family, _gpt2)(model, w, f, kv, vocab)


@dataclass(frozen=True)
class StageFootprint:
    """One stage as the memory and traffic models see it (counts, not bytes)."""

    index: int
    name: str
    layers: int
    width: int
    parts: PartSizes
    trainable_blocks: int
    autograd_blocks: int  # blocks that keep activations and take a backward
    embeddings_trainable: bool
    head_trainable: bool
    tokens: int  # one micro-batch on one rank: batch_size × seq_len
    block_activation_elements: int  # per token, one block (module doc)
    dropout_mask_bytes: int  # per token, one block
    head_positions: float  # positions the head scores per token (masked LM: < 1)
    vocab: int

    @property
    def root(self) -> int:
        """Parameters outside the blocks: the embeddings and the head's own part."""
        return self.parts.embeddings + self.parts.head

    @property
    def root_trainable(self) -> int:
        return (self.parts.embeddings if self.embeddings_trainable else 0) + (
            self.parts.head if self.head_trainable else 0
        )

    @property
    def params(self) -> int:
        return self.layers * self.parts.block + self.root

    @property
    def trainable(self) -> int:
        return self.trainable_blocks * self.parts.block + self.root_trainable


def autograd_blocks(trainable: list[int], layers: int, embeddings_trainable: bool) -> int:
    """Blocks that run with autograd: all when the embeddings train, else those from the
    lowest trainable block up (the frozen bottom runs under no_grad)."""
    if embeddings_trainable:
        return layers
    if not trainable:
        return 0
    return layers - min(trainable)


def stage_footprints(plan: Plan) -> list[StageFootprint]:
    """Every stage's footprint, at its resolved shape (best-effort on invalid plans)."""
    m = plan.model
    vocab = vocab_size(plan)
    a, b, c = ACTIVATION_ELEMENTS.get(m.family, ACTIVATION_ELEMENTS["gpt2"])
    masked = m.family in PARAMETER_COUNTS and family_facts(m.family).objective == "masked"
    out = []
    for stage, shape in zip(plan.stages, resolve_shapes(plan), strict=True):
        w = shape.width or m.hidden_size
        d = m.hidden_size or 1
        f = m.intermediate_size * w // d
        kv = w * m.kv_heads // m.num_heads if m.num_heads > 0 else w
        out.append(
            StageFootprint(
                index=shape.index,
                name=stage.name,
                layers=shape.layers,
                width=w,
                parts=part_sizes(m, w, vocab),
                trainable_blocks=len(shape.trainable_layers),
                autograd_blocks=autograd_blocks(
                    shape.trainable_layers, shape.layers, stage.embeddings_trainable()
                ),
                embeddings_trainable=stage.embeddings_trainable(),
                head_trainable=stage.head_trainable(),
                tokens=max(0, plan.optim.batch_size) * max(0, plan.data.seq_len),
                block_activation_elements=a * w + b * kv + c * f,
                dropout_mask_bytes=DROPOUT_MASKS * w if m.dropout > 0 else 0,
                head_positions=plan.data.mlm_probability if masked else 1.0,
                vocab=vocab,
            )
        )
    return out
