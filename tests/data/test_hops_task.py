"""k-hop induction (`data.source = "task:hops"`): labels against a slow reference, the
alignment with the causal loss's shift, determinism and the separate validation stream."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from growcockpit.backend.data.blocks import HopBlocks
from growcockpit.backend.data.hops import causal_labels, fixed_tokenizer, hop_targets
from growcockpit.plan.types import DataSpec


def slow_hop(x: list[int], k: int) -> list[int | None]:
    """hop_k by the definition, loop by loop: σ(i) = 1 + max{ j < i : x_j = x_i }."""

    def sigma(i: int) -> int | None:
        earlier = [j for j in range(i) if x[j] == x[i]]
        return 1 + max(earlier) if earlier else None

    out: list[int | None] = []
    for i in range(len(x)):
        at: int | None = i
        for _ in range(k):
            at = None if at is None else sigma(at)
        out.append(None if at is None else x[at])
    return out


@settings(max_examples=200, deadline=None)
@given(
    st.integers(2, 6).flatmap(
        lambda a: st.lists(
            st.lists(st.integers(0, a - 1), min_size=1, max_size=24), min_size=1, max_size=4
        ).filter(lambda rows: len({len(r) for r in rows}) == 1)
    ),
    st.integers(1, 6),
)
def test_labels_equal_the_definition(rows: list[list[int]], k: int) -> None:
    got = hop_targets(torch.tensor(rows), k).tolist()
    want = [[-100 if v is None else v for v in slow_hop(r, k)] for r in rows]
    assert got == want


def test_a_known_sequence() -> None:
    # x = a b a b b a: σ(2)=1, σ(3)=2, σ(4)=4, σ(5)=3
    x = torch.tensor([[0, 1, 0, 1, 1, 0]])
    assert hop_targets(x, 1).tolist() == [[-100, -100, 1, 0, 1, 1]]
    assert hop_targets(x, 2).tolist() == [[-100, -100, -100, 1, 1, 0]]


def test_labels_sit_where_the_causal_loss_scores_position_t() -> None:
    """The causal loss scores position t's logits against label t + 1: the answer for
    position t (which sees x_0..x_t) must be stored there, and nothing at index 0."""
    x = torch.tensor([[0, 1, 0, 1, 1, 0]])
    targets = hop_targets(x, 1)
    labels = causal_labels(targets)
    assert labels[0, 0] == -100
    assert labels[0, 1:].tolist() == targets[0, :-1].tolist()


def spec(**kw: int) -> DataSpec:
    return DataSpec(source="task:hops", seq_len=kw.pop("seq_len", 32), **kw)


def test_batches_are_deterministic_and_validation_is_another_stream() -> None:
    a = HopBlocks(spec(hops=3, alphabet=5), "gpt2", seed=7)
    b = HopBlocks(spec(hops=3, alphabet=5), "gpt2", seed=7)
    assert torch.equal(a.train_batch(3, 8).input_ids, b.train_batch(3, 8).input_ids)
    assert not torch.equal(a.train_batch(3, 8).input_ids, a.train_batch(4, 8).input_ids)
    val = a.val_batches(8, 2)
    assert len(val) == 2 and all(v.input_ids.shape == (8, 32) for v in val)
    train = torch.cat([a.train_batch(i, 8).input_ids for i in range(4)])
    assert not any(
        torch.equal(v.input_ids, train[i * 8 : i * 8 + 8]) for v in val for i in range(4)
    )
    other = HopBlocks(spec(hops=3, alphabet=5), "gpt2", seed=8)
    assert not torch.equal(other.train_batch(3, 8).input_ids, a.train_batch(3, 8).input_ids)


def test_a_batch_holds_symbols_and_their_hop_labels() -> None:
    blocks = HopBlocks(spec(hops=2, alphabet=3, seq_len=40), "llama", seed=0)
    batch = blocks.train_batch(0, 4)
    assert int(batch.input_ids.max()) < 3
    assert torch.equal(batch.labels, causal_labels(hop_targets(batch.input_ids, 2)))
    assert (batch.labels != -100).sum() > 0


def test_the_vocabulary_is_the_alphabet_plus_end_of_text() -> None:
    tok = fixed_tokenizer(4)
    assert len(tok) == 5 and tok.eos_token_id == 4
    assert tok("a b c d")["input_ids"] == [0, 1, 2, 3]
    assert tok.decode([3, 2, 1]) == "d c b"
