"""The one operator table (plan/operators.py): every reader agrees with it."""

from __future__ import annotations

import dataclasses
from typing import get_args

import pytest

from growcockpit.plan import Stage, text_problems
from growcockpit.plan.operators import (
    OPERATOR_NAMES,
    OPERATORS,
    OPTION_DEFAULTS,
    OPTION_LABELS,
    changes_model,
    operator_label,
    operators_where,
    operators_with,
)
from growcockpit.plan.types import OPERATORS as TYPE_OPERATORS
from growcockpit.plan.types import Operator
from growcockpit.plan.types import Stage as StageType


def test_table_matches_the_literal_and_the_stage_fields() -> None:
    assert OPERATOR_NAMES == get_args(Operator) == TYPE_OPERATORS
    fields = set(StageType.__dataclass_fields__)
    for spec in OPERATORS.values():
        assert set(spec.options) <= set(OPTION_DEFAULTS) <= fields
        assert set(spec.options) <= set(OPTION_LABELS)
        assert spec.verb
    for option, unused in OPTION_DEFAULTS.items():
        f = StageType.__dataclass_fields__[option]
        default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        assert default == unused


@pytest.mark.heavy_deps  # the backend's dispatch table (torch)
def test_backend_dispatch_covers_the_table() -> None:
    from growcockpit.backend.loop.operators import GROW_FUNCTIONS

    assert set(GROW_FUNCTIONS) == set(OPERATORS)


@pytest.mark.parametrize(
    ("stage", "label"),
    [
        (Stage("s", 4, 1, enter="init"), "init"),
        (Stage("s", 4, 1, enter="stack", source="bottom"), "stack (bottom)"),
        (Stage("s", 4, 1, enter="stack", ramp_steps=5), "stack (top, ramp 5)"),
        (Stage("s", 2, 1, enter="coalesce", pairing="half"), "coalesce (half)"),
        (Stage("s", 4, 1, enter="interpolate"), "interpolate (adjacent, α=0.25)"),
        (Stage("s", 4, 1, enter="bogus"), "bogus"),  # type: ignore[arg-type]
    ],
)
def test_labels(stage: Stage, label: str) -> None:
    assert operator_label(stage, "gpt2") == label


def test_changes_model() -> None:
    assert [op for op in OPERATOR_NAMES if not changes_model(op)] == ["init", "continue"]
    assert operators_with("pairing") == ("coalesce", "decoalesce", "interpolate")
    assert operators_with("alpha") == ("interpolate",)


HEAD = """name = "t"
[model]
hidden_size = 64
num_heads = 2
intermediate_size = 128
final_layers = 4
[[stages]]
name = "a"
layers = 4
steps = 1
"""


@pytest.mark.parametrize(
    ("extra", "key", "needle"),
    [
        (
            'source = "bottom"',
            "stages[1].source",
            'only applies to enter = "stack", not "continue"',
        ),
        ('pairing = "half"', "stages[1].pairing", '"coalesce", "decoalesce", "interpolate"'),
        ("alpha = 0.3", "stages[1].alpha", 'remove alpha, or set enter = "interpolate"'),
    ],
)
def test_options_apply_only_to_their_operators(extra: str, key: str, needle: str) -> None:
    problems = text_problems(HEAD + f'[[stages]]\nname = "b"\nlayers = 4\nsteps = 1\n{extra}\n')
    assert [p.key for p in problems] == [key]
    assert needle in problems[0].problem


# ---- readers that derive their sets from the table (the sets they once wrote by hand) ----
def test_ramp_operators_derive_from_the_rows() -> None:
    from growcockpit.plan.recipe_checks import RAMP_OPERATORS

    assert RAMP_OPERATORS == ("stack", "decoalesce")
    assert operators_with("ramp_steps") == RAMP_OPERATORS  # ramps: takes the option


def test_a_ramp_on_a_stage_that_adds_no_blocks_names_the_ramp_operators() -> None:
    problems = text_problems(
        HEAD + '[[stages]]\nname = "b"\nlayers = 4\nsteps = 1\nramp_steps = 1\n'
    )
    assert [p.key for p in problems] == ["stages[1].ramp_steps"]
    assert problems[0].problem == (
        'gates the blocks a growing operator adds, but enter = "continue" adds none; '
        'use it on an enter = "stack" or "decoalesce" stage, or remove ramp_steps'
    )


def test_shard_local_operators_derive_from_the_rows() -> None:
    assert operators_where(lambda spec: spec.shard_local) == ("continue", "stack")
    # the sharded path of a model-changing local operator is stack's (fsdp_grow.grow_locally)
    assert [op for op in operators_where(lambda s: s.shard_local) if changes_model(op)] == ["stack"]


def test_fsdp_local_path_reads_the_table() -> None:
    pytest.importorskip("torch")
    from growcockpit.backend.parallel.fsdp_grow import LOCAL_OPERATORS, takes_local_path

    assert frozenset({"continue", "stack"}) == LOCAL_OPERATORS
    assert [op for op in OPERATOR_NAMES if takes_local_path(Stage("s", 4, 1, enter=op))] == [
        "continue",
        "stack",
    ]


def test_cockpit_stage_list_actions_derive_from_the_rows() -> None:
    from growcockpit.session.fold.plan import ACTIONS, StageInfo

    assert ACTIONS == {
        "init": "build the model",
        "continue": "keep the model",
        "stack": "stack new layers",
        "coalesce": "coalesce layers",
        "decoalesce": "de-coalesce layers",
        "interpolate": "interpolate layers",
        "probe": "probe",  # as the stage list wrote an operator it had no words for
    }
    assert StageInfo(1, "grow", 4, 40, enter="stack").describe() == (
        "stack new layers to 4 layers, train all, 40 steps"
    )
    assert StageInfo(1, "x", 4, 40, enter="bogus").describe().startswith("bogus to 4 layers")
