"""Samples at an evaluation (`[samples]`): what the model writes for a few fixed prompts.

A causal LM (GPT-2, Llama) continues each prompt token by token, greedily or sampled
with a generator seeded by `samples.seed` afresh at every evaluation (on the CPU, so
the draw does not depend on the device), so two evaluations differ only by what the
model learned in between. A masked LM (BERT) fills each [MASK] of its prompts and
reports its most likely tokens. Every layer runs, frozen or not, through the same
block calls as the evaluation's loss: the text is the whole current model's.
Bounded by the plan (at most 8 prompts × 256 tokens); no KV cache, which a tiny
model sampling a few dozen tokens does not miss.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
from torch import nn
from transformers import PreTrainedTokenizerBase

from growcockpit.families import spec_of
from growcockpit.grow import set_train_modes
from growcockpit.grow.model_parts import get_layers
from growcockpit.plan.samples import MASK, objective_of, prompts_of, samples_due
from growcockpit.plan.types import Plan, SamplesSpec
from growcockpit.protocol.samples_event import Samples, SampleText


def full_logits(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """Logits of the whole model (every block, none skipped) for token ids (1, T)."""
    family = spec_of(model)
    h = family.embed(model, ids)
    run = family.block_call(model, h)
    for layer in get_layers(model):
        h = run(layer, h)
    return family.head_logits(model, h)


def _next_token(logits: torch.Tensor, spec: SamplesSpec, generator: torch.Generator) -> int:
    """Greedy at temperature 0; else a draw from the (top-k) softmax at that temperature."""
    scores = logits.float().cpu()
    if spec.temperature <= 0:
        return int(scores.argmax())
    if 0 < spec.top_k < scores.numel():
        kept, index = scores.topk(spec.top_k)
        probs = torch.softmax(kept / spec.temperature, dim=-1)
        return int(index[torch.multinomial(probs, 1, generator=generator)])
    probs = torch.softmax(scores / spec.temperature, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))


@dataclass
class SampleWriter:
    """What each prompt's text is written with: the model, its tokenizer, the `[samples]`
    keys and the model's context window (`max_seq_len` positions)."""

    model: nn.Module
    tokenizer: PreTrainedTokenizerBase
    spec: SamplesSpec
    window: int
    device: torch.device

    def logits(self, ids: list[int]) -> torch.Tensor:
        return full_logits(self.model, torch.tensor([ids[-self.window :]], device=self.device))[0]

    def continue_prompt(self, prompt: str, generator: torch.Generator) -> SampleText:
        """A causal LM's continuation of `prompt`: up to `max_new_tokens`, ending early at
        the end-of-text token; the context is cropped to the last `window` positions."""
        tok = self.tokenizer
        ids: list[int] = tok.encode(prompt, add_special_tokens=False)
        if not ids and tok.eos_token_id is not None:
            ids = [tok.eos_token_id]
        new: list[int] = []
        for _ in range(self.spec.max_new_tokens):
            token = _next_token(self.logits(ids + new)[-1], self.spec, generator)
            if token == tok.eos_token_id:
                break
            new.append(token)
        return SampleText(prompt=prompt, text=str(tok.decode(new, skip_special_tokens=True)))

    def fill_masks(self, prompt: str) -> SampleText:
        """A masked LM's guesses for each [MASK] of `prompt` (encoded between [CLS] and
        [SEP], as the training blocks are): the filled text and the likeliest tokens."""
        tok = self.tokenizer
        pieces = prompt.split(MASK)
        ids: list[int] = [] if tok.cls_token_id is None else [tok.cls_token_id]
        where: list[int] = []
        for i, piece in enumerate(pieces):
            ids += tok.encode(piece, add_special_tokens=False)
            if i < len(pieces) - 1:
                where.append(len(ids))
                ids.append(int(tok.mask_token_id))
        if tok.sep_token_id is not None:
            ids.append(tok.sep_token_id)
        where = [w for w in where if w < self.window]
        logits = self.logits(ids[: self.window])
        probs = torch.softmax(logits[where].float(), dim=-1).cpu()
        top = probs.topk(min(self.spec.mask_predictions, probs.shape[-1]), dim=-1)
        tokens = [[str(tok.decode([int(t)])).strip() for t in row] for row in top.indices]
        chances = [[round(float(p), 4) for p in row] for row in top.values]
        best = [row[0] for row in tokens] + [MASK] * (len(pieces) - 1 - len(tokens))
        text = pieces[0] + "".join(w + piece for w, piece in zip(best, pieces[1:], strict=True))
        return SampleText(prompt=prompt, text=text, top_tokens=tokens, top_probs=chances)


@torch.no_grad()
def write_samples(
    model: nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    plan: Plan,
    device: torch.device,
    autocast: contextlib.AbstractContextManager[None],
    step: int,
    stage: int,
) -> Samples:
    """The `samples` event of the model as it is now; train modes restored after."""
    spec = plan.samples
    kind = objective_of(plan.model.family)
    writer = SampleWriter(model, tokenizer, spec, plan.model.max_seq_len, device)
    was_training = model.training
    model.eval()
    generator = torch.Generator().manual_seed(spec.seed)
    try:
        with autocast:
            texts = [
                writer.fill_masks(prompt)
                if kind == "masked"
                else writer.continue_prompt(prompt, generator)
                for prompt in prompts_of(plan)
            ]
    finally:
        if was_training:
            set_train_modes(model)
    return Samples(
        step=step,
        stage=stage,
        kind=kind,
        temperature=spec.temperature,
        seed=spec.seed,
        samples=texts,
    )


@dataclass
class SampleCadence:
    """When the run writes samples (plan/samples.py `samples_due`), and the step it last did,
    so the final evaluation adds them once even where a periodic evaluation just ran."""

    sampled_at: int | None = None

    def take(self, plan: Plan, step: int, final: bool) -> bool:
        """Whether samples are due at `step`; if so, they count as written there."""
        if self.sampled_at == step:
            return False
        due = samples_due(plan.samples, plan.metrics.eval_every_steps, step, final)
        if due:
            self.sampled_at = step
        return due
