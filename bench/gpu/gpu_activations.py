"""Activation bytes of a step: what makes the GPU check's roofline a roofline.

Without them the memory side of the bound counted only weights and AdamW state,
which a training step at these shapes never comes near, so `ms / bound` was just
1 / MFU. This is a lower bound of the activation traffic: each intermediate a
block writes in the forward (Q/K/V, attention output, projection, the two norms,
the FFN's hidden and activated tensors, its output, the two residual sums) is
written once and read once (2 accesses); a block that backward passes through
(trained, or frozen above the lowest trained one) reads it again and writes and
reads its gradient (4 accesses); a frozen bottom under `no_grad` only the 2. The
head's logits are written, read and upcast for the cross-entropy (fp32) and their
gradient written and read. Attention scores are not counted: SDPA's fused kernels
never store them. Norm statistics, dropout masks, embeddings and the optimizer's
own traffic beyond its state are left out, hence a lower bound.
"""

from __future__ import annotations

from growcockpit.plan.cost import vocab_size
from growcockpit.plan.families import family_facts
from growcockpit.plan.shapes import resolve_shapes
from growcockpit.plan.types import Plan


def block_elements_per_token(plan: Plan, width: int) -> int:
    """Elements one block writes per token in its forward (see the module docstring)."""
    m = plan.model
    ffn = m.intermediate_size * width // m.hidden_size
    kv = width * m.kv_heads // m.num_heads
    ffn_tensors = 3 if family_facts(m.family).ffn_matrices == 3 else 2  # gate, up, act / fc, act
    return 8 * width + 2 * kv + ffn_tensors * ffn


def activation_bytes(plan: Plan, stage_index: int, act_bytes: int) -> float:
    """A lower bound of one step's activation traffic in bytes at stage `stage_index`."""
    stage = plan.stages[stage_index]
    shape = resolve_shapes(plan)[stage_index]
    tokens = plan.data.seq_len * plan.optim.batch_size * plan.optim.grad_accum_steps
    lowest = min(shape.trainable_layers) if shape.trainable_layers else shape.layers
    no_grad = 0 if stage.embeddings_trainable() else lowest
    accesses = 2 * no_grad + 4 * (shape.layers - no_grad)
    blocks = tokens * block_elements_per_token(plan, shape.width) * accesses * act_bytes
    masked = family_facts(plan.model.family).objective == "masked"
    rows = tokens * (plan.data.mlm_probability if masked else 1.0)
    logits = rows * vocab_size(plan)
    head = logits * (2 * act_bytes + 2 * 4) + logits * 2 * act_bytes  # fwd + CE, then grad
    return float(blocks + head)
