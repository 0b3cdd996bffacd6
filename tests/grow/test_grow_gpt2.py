"""GPT-2 (pre-LN, tied LM head) under width de-coalescing: function preservation and its guard.

| recipe                                            | logits            |
|---------------------------------------------------|-------------------|
| multi-level (embeddings ×½)                        | differ (guard)    |
| embeddings unscaled, ln_f unchanged               | exactly 2×        |
| embeddings unscaled, ln_f γ, β halved (default)   | equal             |
"""

from __future__ import annotations

import pytest
import torch
from grow_fixtures import logits, state_equal, tiny_batch, tiny_model

from growcockpit.backend.loop.forward import StagedForward
from growcockpit.grow import coalesce_model, decoalesce_model, interpolate_model


def _small() -> torch.nn.Module:
    return tiny_model("gpt2", layers=2, hidden=32, heads=4, ffn=64, dtype=torch.float64).eval()


def test_default_gpt2_decoalesce_preserves_logits() -> None:
    small = _small()
    big, _ = decoalesce_model(small, width=True, depth=False)
    big.eval()
    assert big.lm_head.weight is big.transformer.wte.weight  # still tied
    batch = tiny_batch("gpt2")
    torch.testing.assert_close(
        logits(big, batch.input_ids), logits(small, batch.input_ids), rtol=1e-10, atol=1e-10
    )
    with torch.no_grad():
        torch.testing.assert_close(
            StagedForward(0, True).loss(big, batch), StagedForward(0, True).loss(small, batch)
        )
    # the fix is on ln_f: γ and β are copied and halved
    torch.testing.assert_close(
        big.transformer.ln_f.weight, small.transformer.ln_f.weight.repeat(2) / 2
    )
    torch.testing.assert_close(
        big.transformer.wte.weight, small.transformer.wte.weight.repeat(1, 2)
    )


def test_default_gpt2_decoalesce_preserves_logits_fp32() -> None:
    small = tiny_model("gpt2", layers=2).eval()
    big, _ = decoalesce_model(small, width=True, depth=False)
    ids = tiny_batch("gpt2").input_ids
    torch.testing.assert_close(logits(big.eval(), ids), logits(small, ids), rtol=1e-5, atol=1e-5)


def test_guard_multilevel_recipe_does_not_preserve_tied_preln() -> None:
    """Regression guard: the BERT recipe (×½ embeddings) must not be confused with GPT-2's."""
    small = _small()
    big, _ = decoalesce_model(small, width=True, depth=False, recipe="multilevel")
    ids = tiny_batch("gpt2").input_ids
    diff = (logits(big.eval(), ids) - logits(small, ids)).abs().max()
    assert diff > 1e-2
    assert not torch.allclose(logits(big, ids), logits(small, ids), rtol=1e-3, atol=1e-3)


def test_unscaled_embeddings_without_ln_f_fix_double_the_logits() -> None:
    small = _small()
    big, _ = decoalesce_model(small, width=True, depth=False, recipe="multilevel")
    with torch.no_grad():  # undo the ×½ on the embeddings: logits become exactly 2×
        big.transformer.wte.weight.mul_(2)
        big.transformer.wpe.weight.mul_(2)
    ids = tiny_batch("gpt2").input_ids
    torch.testing.assert_close(logits(big.eval(), ids), 2 * logits(small, ids))


def test_recipes_are_each_exact_inverses() -> None:
    small = _small()
    for recipe in ("auto", "multilevel", "preln-tied"):
        big, _ = decoalesce_model(small, width=True, depth=True, recipe=recipe)
        back, _ = coalesce_model(big, width=True, depth=True, recipe=recipe)
        assert state_equal(back, small), recipe
    with pytest.raises(ValueError, match="recipe"):
        coalesce_model(small, width=True, depth=False, recipe="bogus")


def test_bert_preln_tied_recipe_is_not_the_default() -> None:
    """BERT's default is the multi-level recipe: embeddings ×2 under C."""
    bert = tiny_model("bert", layers=2, dtype=torch.float64)
    small, _ = coalesce_model(bert, width=True, depth=False)
    e = bert.bert.embeddings.word_embeddings.weight
    torch.testing.assert_close(small.bert.embeddings.word_embeddings.weight, e[:, :16] + e[:, 16:])


def test_gpt2_interpolation_alpha_default_quarter_runs() -> None:
    saved = tiny_model("gpt2", layers=4)
    small, _ = coalesce_model(saved, width=True, depth=True)
    mixed, result = interpolate_model(saved, small, alpha=0.25, width=True, depth=True)
    batch = tiny_batch("gpt2")
    assert torch.isfinite(StagedForward(0, True).loss(mixed, batch))
    assert "alpha=0.25" in result.detail


def test_bert_refuses_the_preln_tied_recipe() -> None:
    """D with "preln-tied" on BERT changed logits by up to 12.6; it is refused."""
    bert = tiny_model("bert", layers=2)
    small, _ = coalesce_model(bert, width=True, depth=False)
    for call in (
        lambda: decoalesce_model(small, width=True, depth=False, recipe="preln-tied"),
        lambda: coalesce_model(bert, width=True, depth=False, recipe="preln-tied"),
    ):
        with pytest.raises(ValueError, match='use recipe="multilevel" or "auto"'):
            call()
