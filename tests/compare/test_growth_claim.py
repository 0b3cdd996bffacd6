"""`growth_claim`: a growth speedup only where growth beats the full model's envelope and
every smaller fixed model on every seed, with the gate decided and the seeds tested."""

from __future__ import annotations

from growcockpit.compare.claim import SeedCosts, growth_claim, unclaimed_mark
from growcockpit.compare.depth_gate import DepthArm, depth_gate
from growcockpit.compare.envelope import Cost, CurvePoint, Target, envelope

TARGET = Target("val_loss", 3.0)
PAYS = depth_gate(
    DepthArm(4, (3.0, 3.01, 3.0)), [DepthArm(2, (3.4, 3.41, 3.4)), DepthArm(1, (3.8, 3.8, 3.81))]
)


def _curve(values: list[float], flops_per_eval: float = 1.0) -> list[CurvePoint]:
    return [
        CurvePoint((i + 1) * flops_per_eval, (i + 1) * flops_per_eval, v)
        for i, v in enumerate(values)
    ]


LONG = _curve([6, 5.5, 5, 4.5, 4.2, 4.0, 3.6, 3.4, 3.2, 3.0])  # reaches 3.0 at 10
HALF = _curve([6, 5, 4, 3.5, 3.0])  # full@0.5, decayed at its own end: reaches 3.0 at 5


def _seed(
    seed: int, growth_at: float | None, half: bool = True, fixed: float | None = None
) -> SeedCosts:
    curves = {"baseline": LONG, **({"full@0.5": HALF} if half else {})}
    grown = None if growth_at is None else Cost(growth_at, growth_at)
    small = {"depth-2": None if fixed is None else Cost(fixed, fixed)}
    return SeedCosts(seed, grown, envelope(curves, TARGET), small)


def test_growth_that_beats_only_the_long_baselines_curve_gets_no_speedup_claimed() -> None:
    # growth reaches 3.0 at 7: "1.4× sooner than the baseline", but full@0.5 gets there at 5
    claim = growth_claim([_seed(s, 7.0) for s in range(3)], TARGET, PAYS)
    assert claim.status == "unclaimed" and claim.winner == "full@0.5"
    assert claim.text == (
        "The full model trained for half the budget (full@0.5) reaches val loss 3.000 sooner "
        "(FLOPs, seed 0); no growth speedup is claimed"
    )
    assert unclaimed_mark("1.43x", claim) == "unclaimed(1.43x)"


def test_without_the_short_schedule_the_same_run_would_have_been_claimed() -> None:
    claim = growth_claim([_seed(s, 7.0 - 0.1 * s, half=False) for s in range(3)], TARGET, PAYS)
    assert claim.status == "claimed" and claim.seeds == 3
    assert "sooner than the full model's best (baseline)" in claim.text
    assert "one-sided paired t-test p =" in claim.text
    assert unclaimed_mark("1.43x", claim) == "1.43x"


def test_growth_ahead_of_the_envelope_on_every_seed_is_claimed_against_it() -> None:
    claim = growth_claim([_seed(s, 3.0 + 0.1 * s, fixed=8.0) for s in range(3)], TARGET, PAYS)
    assert claim.claimed, claim.text
    assert claim.tests["flops"].ratios[0] == 5.0 / 3.0  # against full@0.5, the envelope


def test_a_smaller_fixed_model_that_reaches_first_wins() -> None:
    claim = growth_claim([_seed(s, 3.0, fixed=2.0) for s in range(3)], TARGET, PAYS)
    assert claim.status == "unclaimed" and claim.winner == "depth-2"
    assert claim.text.startswith("A fixed 2-layer model (depth-2) reaches val loss 3.000 sooner")


def test_one_seed_behind_is_enough_to_lose_the_claim() -> None:
    claim = growth_claim([_seed(0, 3.0), _seed(1, 3.0), _seed(2, 6.0)], TARGET, PAYS)
    assert claim.status == "unclaimed" and "seed 2" in claim.text


def test_one_seed_ahead_is_not_a_result() -> None:
    claim = growth_claim([_seed(0, 3.0)], TARGET, PAYS)
    assert claim.status == "unclaimed"
    assert "one seed: not a result" in claim.text and claim.text.endswith(
        "no growth speedup is claimed"
    )


def test_an_undecided_or_missing_gate_never_claims() -> None:
    seeds = [_seed(s, 1.0) for s in range(3)]
    assert growth_claim(seeds, TARGET, None).status == "undecided"
    missing = growth_claim(seeds, TARGET, PAYS, missing=["full@0.25"])
    assert missing.status == "undecided" and "full@0.25 did not finish" in missing.text
    undecided = depth_gate(DepthArm(4, (3.0,)), [DepthArm(2, (3.5,))], needed=[1, 2])
    assert undecided.status == "undecided" and not undecided.pays
    claim = growth_claim(seeds, TARGET, undecided)
    assert claim.status == "undecided" and "depth-1 did not finish" in claim.text
    assert "pays" not in claim.text


def test_depth_that_does_not_pay_is_the_gates_line() -> None:
    gate = depth_gate(DepthArm(4, (3.5,)), [DepthArm(2, (3.0,))])
    claim = growth_claim([_seed(0, 1.0)], TARGET, gate)
    assert claim.status == "unclaimed" and claim.text == gate.text


def test_growth_that_never_reaches_the_target_is_not_claimed() -> None:
    claim = growth_claim([_seed(0, 3.0), _seed(1, None), _seed(2, 3.0)], TARGET, PAYS)
    assert claim.status == "unclaimed" and "never reached" in claim.text


def test_an_accuracy_target_works_the_same_way() -> None:
    target = Target("accuracy", 0.95)
    full = envelope({"baseline": [CurvePoint(i, i, 0.1 * i) for i in range(1, 11)]}, target)
    seeds = [
        SeedCosts(s, Cost(5.0 + 0.1 * s, 5.0 + 0.1 * s), full, {"depth-2": None}) for s in range(3)
    ]
    claim = growth_claim(seeds, target, PAYS)
    assert claim.claimed and "95 % accuracy" in claim.text
