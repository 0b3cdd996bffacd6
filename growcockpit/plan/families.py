"""What the plan layer knows about each model family: a stdlib-only table.

The torch half of a family (how to build it, run its blocks, map its tensors)
lives in `growcockpit/families/`; this table holds the facts that validation,
the cost model, the data pipeline and the cockpit need without importing
torch: the objective, the tokenizer style, defaults, and which growth
recipes the architecture supports. One row per family; `growcockpit/families`
registers a torch spec under the same name and a test checks both agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Objective = Literal["masked", "causal"]
TokenizerStyle = Literal["wordpiece", "byte-bpe"]


@dataclass(frozen=True)
class FamilyFacts:
    """One family's plan-level facts.

    `identity_init`: a copied block with its residual output projections zeroed
    adds nothing to the residual stream (pre-norm blocks; not post-LN BERT,
    whose LayerNorm follows the residual sum). `boundary_tokens`: tokens the
    data pipeline wraps around each block ([CLS] … [SEP] for BERT).
    `width_recipes`: the de-coalescing recipes that preserve the function,
    the default first. `config_keys`: plan shape field → `config.json` key, to
    read a `save_pretrained` directory for `model.init_from`. `model_keys`: the
    `[model]` keys only this family takes, with their defaults. `ffn_matrices`:
    d × FFN matrices per block (2; SwiGLU 3), for the cost model. `tied_head`:
    whether the LM head is the token table (Llama: `model.tie_embeddings`).
    """

    name: str
    title: str
    objective: Objective
    tokenizer: TokenizerStyle
    specials: Mapping[str, str]
    default_vocab: int
    default_alpha: float
    identity_init: bool
    boundary_tokens: int
    width_recipes: tuple[str, ...]
    config_keys: Mapping[str, str]
    config_defaults: Mapping[str, str] = field(default_factory=dict)
    model_keys: Mapping[str, object] = field(default_factory=dict)
    ffn_matrices: int = 2
    tied_head: bool = True


# the order is the trained vocabulary's id order: changing it renumbers every cached tokenizer
BERT_SPECIALS: Mapping[str, str] = {
    "pad_token": "[PAD]",
    "unk_token": "[UNK]",
    "cls_token": "[CLS]",
    "sep_token": "[SEP]",
    "mask_token": "[MASK]",
}
BYTE_BPE_SPECIALS: Mapping[str, str] = {
    "bos_token": "<|endoftext|>",
    "eos_token": "<|endoftext|>",
    "unk_token": "<|endoftext|>",
}

# transformers' common config names (BERT, Llama); GPT-2 has its own
_HF_CONFIG_KEYS: Mapping[str, str] = {
    "layers": "num_hidden_layers",
    "hidden_size": "hidden_size",
    "num_heads": "num_attention_heads",
    "intermediate_size": "intermediate_size",
    "max_seq_len": "max_position_embeddings",
    "vocab_size": "vocab_size",
}

BERT = FamilyFacts(
    name="bert",
    title="BERT masked-LM (post-LN encoder, tied decoder)",
    objective="masked",
    tokenizer="wordpiece",
    specials=BERT_SPECIALS,
    default_vocab=30522,
    default_alpha=0.5,
    identity_init=False,
    boundary_tokens=2,
    width_recipes=("multilevel",),
    config_keys=_HF_CONFIG_KEYS,
)

GPT2 = FamilyFacts(
    name="gpt2",
    title="GPT-2 causal-LM (pre-LN decoder, tied head)",
    objective="causal",
    tokenizer="byte-bpe",
    specials=BYTE_BPE_SPECIALS,
    default_vocab=50257,
    default_alpha=0.25,
    identity_init=True,
    boundary_tokens=0,
    width_recipes=("preln-tied", "multilevel"),
    config_keys={
        "layers": "n_layer",
        "hidden_size": "n_embd",
        "num_heads": "n_head",
        "intermediate_size": "n_inner",
        "max_seq_len": "n_positions",
        "vocab_size": "vocab_size",
    },
    config_defaults={"n_inner": "4*n_embd"},
)

LLAMA = FamilyFacts(
    name="llama",
    title="Llama-style causal-LM (RMSNorm, rotary, SwiGLU, grouped-query attention)",
    objective="causal",
    tokenizer="byte-bpe",
    specials=BYTE_BPE_SPECIALS,
    default_vocab=32000,
    default_alpha=0.25,
    identity_init=True,
    boundary_tokens=0,
    width_recipes=("preln-untied",),
    config_keys={**_HF_CONFIG_KEYS, "num_kv_heads": "num_key_value_heads"},
    model_keys={
        "num_kv_heads": None,  # None: num_heads (plain multi-head attention)
        "rope_theta": 10000.0,
        "tie_embeddings": False,
        "rms_norm_eps": 1e-6,
    },
    ffn_matrices=3,
    tied_head=False,
)

FAMILY_FACTS: dict[str, FamilyFacts] = {f.name: f for f in (BERT, GPT2, LLAMA)}
# every family-only [model] key, and the families that take it
FAMILY_MODEL_KEYS: dict[str, tuple[str, ...]] = {
    key: tuple(f.name for f in FAMILY_FACTS.values() if key in f.model_keys)
    for f in FAMILY_FACTS.values()
    for key in f.model_keys
}
FAMILIES: tuple[str, ...] = tuple(FAMILY_FACTS)


class UnknownFamily(ValueError):
    """A family name no row of the table has; the message lists the registered ones."""


def family_facts(name: str) -> FamilyFacts:
    """The row for `name`; raises UnknownFamily naming the registered families."""
    try:
        return FAMILY_FACTS[name]
    except KeyError:
        raise UnknownFamily(
            f'unknown model family "{name}"; one of {", ".join(FAMILIES)}'
        ) from None


def family_of_model_type(model_type: object) -> FamilyFacts | None:
    """The row whose name is a `config.json` `model_type`, or None."""
    return FAMILY_FACTS.get(str(model_type))
