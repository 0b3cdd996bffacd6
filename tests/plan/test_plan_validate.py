"""Plan validation: one-line errors with key path and file:line; shapes; edits."""

from __future__ import annotations

import copy

import pytest

from growcockpit.plan import (
    ModelSpec,
    Plan,
    PlanError,
    Stage,
    load_plan,
    loads_plan,
    plan_problems,
    replace_remaining_stages,
    resolve_shapes,
    text_problems,
    validate_plan,
)
from growcockpit.resources import sample_plan


def model(final: int = 4, hidden: int = 128, heads: int = 4, family: str = "bert") -> str:
    return f"""\
name = "t"

[model]
family = "{family}"
hidden_size = {hidden}
num_heads = {heads}
intermediate_size = {hidden * 4}
max_seq_len = 128
final_layers = {final}
"""


def stages(*blocks: str) -> str:
    return "".join(f"\n[[stages]]\n{block.strip()}\n" for block in blocks)


S0 = 'name = "s0"\nlayers = 4\nsteps = 10'
S0_2 = 'name = "s0"\nlayers = 2\nsteps = 10'

# (plan text with the offending line marked "# <-", expected key path, a phrase of the message)
INVALID: dict[str, tuple[str, str, str]] = {
    "unknown top-level key": (
        'nmae = "x"  # <-\n' + model() + stages(S0),
        "nmae",
        'did you mean "name"',
    ),
    "unknown section key": (
        model() + "\n[optim]\nlearning_rate = 1e-3  # <-\n" + stages(S0),
        "optim.learning_rate",
        "valid keys: name, lr,",
    ),
    "unknown stage key": (
        model() + stages(S0, 'name = "s1"\nlayers = 4\nstpes = 3  # <-'),
        "stages[1].stpes",
        'did you mean "steps"',
    ),
    "missing stage key": (
        model() + stages(S0) + '\n[[stages]]  # <-\nname = "s1"\nlayers = 4\n',
        "stages[1].steps",
        "missing required key",
    ),
    "missing name": (
        'seed = 1  # <-\n[[stages]]\nname = "a"\nlayers = 4\nsteps = 1\n',
        "name",
        "missing required key",
    ),
    "non-positive steps": (
        model() + stages('name = "s0"\nlayers = 4\nsteps = 0  # <-'),
        "stages[0].steps",
        "must be ≥ 1",
    ),
    "non-positive lr": (
        model() + "\n[optim]\nlr = -1e-4  # <-\n" + stages(S0),
        "optim.lr",
        "must be > 0",
    ),
    "non-positive batch": (
        model() + "\n[optim]\nbatch_size = 0  # <-\n" + stages(S0),
        "optim.batch_size",
        "must be ≥ 1",
    ),
    "hidden not divisible": (
        model(hidden=128, heads=3).replace("hidden_size = 128", "hidden_size = 128  # <-")
        + stages(S0),
        "model.hidden_size",
        "not divisible by num_heads = 3",
    ),
    "unknown family": (
        model(family="t5").replace('"t5"', '"t5"  # <-') + stages(S0),
        "model.family",
        '"bert", "gpt2"',
    ),
    "unknown operator": (
        model() + stages(S0, 'name = "s1"\nlayers = 4\nenter = "grow"  # <-\nsteps = 1'),
        "stages[1].enter",
        "unknown value",
    ),
    "unknown train policy": (
        model() + stages(S0, 'name = "s1"\nlayers = 4\ntrain = "most"  # <-\nsteps = 1'),
        "stages[1].train",
        "unknown train policy",
    ),
    "unknown advance": (
        model() + stages(S0, 'name = "s1"\nlayers = 4\nadvance = "later"  # <-\nsteps = 1'),
        "stages[1].advance",
        '"auto", "manual"',
    ),
    "unknown schedule": (
        model() + '\n[optim]\nschedule = "step"  # <-\n' + stages(S0),
        "optim.schedule",
        '"cosine"',
    ),
    "unknown optimizer": (
        model() + '\n[optim]\nname = "sgd"  # <-\n' + stages(S0),
        "optim.name",
        '"adamw", "lamb"',
    ),
    "unknown source": (
        model()
        + stages(
            S0_2, 'name = "s1"\nlayers = 4\nenter = "stack"\nsource = "center"  # <-\nsteps = 1'
        ),
        "stages[1].source",
        '"bottom"',
    ),
    "unknown pairing": (
        model()
        + stages(
            S0,
            'name = "s1"\nlayers = 2\nenter = "coalesce"\npairing = "odd"  # <-\nsteps = 1',
            'name = "s2"\nlayers = 4\nenter = "decoalesce"\nsteps = 1',
        ),
        "stages[1].pairing",
        '"adjacent", "half"',
    ),
    "first stage not init": (
        model() + stages('name = "s0"\nlayers = 4\nenter = "continue"  # <-\nsteps = 1'),
        "stages[0].enter",
        'use enter = "init"',
    ),
    "init on a later stage": (
        model() + stages(S0, 'name = "s1"\nlayers = 4\nenter = "init"  # <-\nsteps = 1'),
        "stages[1].enter",
        "only for the first stage",
    ),
    "continue changes depth": (
        model() + stages(S0_2, 'name = "s1"\nlayers = 4  # <-\nsteps = 1'),
        "stages[1].layers",
        'use enter = "stack"',
    ),
    "stack adds nothing": (
        model() + stages(S0, 'name = "s1"\nenter = "stack"\nlayers = 4  # <-\nsteps = 1'),
        "stages[1].layers",
        "must add layers, but layers goes 4 → 4",
    ),
    "stack bottom too many": (
        model()
        + stages(
            'name = "s0"\nlayers = 1\nsteps = 1',
            'name = "s1"\nenter = "stack"\nsource = "bottom"\nlayers = 4  # <-\nsteps = 1',
        ),
        "stages[1].layers",
        "set layers ≤ 2",
    ),
    "new adds no layers": (
        model() + stages(S0, 'name = "s1"\nlayers = 4\ntrain = "new"  # <-\nsteps = 1'),
        "stages[1].train",
        '"new" but this stage adds no layers (4 → 4); use "all" or "top:K", or raise layers',
    ),
    "top:K too big": (
        model() + stages('name = "s0"\nlayers = 4\ntrain = "top:5"  # <-\nsteps = 1'),
        "stages[0].train",
        "between 1 and layers = 4",
    ),
    "top:K zero": (
        model() + stages('name = "s0"\nlayers = 4\ntrain = "top:0"  # <-\nsteps = 1'),
        "stages[0].train",
        "between 1 and layers = 4",
    ),
    "top:K not int": (
        model() + stages('name = "s0"\nlayers = 4\ntrain = "top:x"  # <-\nsteps = 1'),
        "stages[0].train",
        "whole number",
    ),
    "coalesce odd heads": (
        model(hidden=96, heads=3)
        + stages(
            S0,
            '  # <-\nname = "s1"\nlayers = 4\nenter = "coalesce"\nsteps = 1',
            'name = "s2"\nlayers = 4\nenter = "decoalesce"\nsteps = 1',
        ),
        "stages[1].width",
        "heads odd",
    ),
    "coalesce odd depth": (
        model(final=3)
        + stages(
            'name = "s0"\nlayers = 3\nsteps = 1',
            'name = "s1"\nlayers = 1  # <-\nenter = "coalesce"\nwidth = 128\nsteps = 1',
            'name = "s2"\nlayers = 3\nenter = "decoalesce"\nsteps = 1',
        ),
        "stages[1].layers",
        "odd depth (3)",
    ),
    "coalesce width not halving": (
        model()
        + stages(
            S0,
            'name = "s1"\nlayers = 4\nenter = "coalesce"\nwidth = 32  # <-\nsteps = 1',
            'name = "s2"\nlayers = 4\nenter = "decoalesce"\nsteps = 1',
        ),
        "stages[1].width",
        "set width = 64",
    ),
    "decoalesce without coalesce": (
        model() + stages(S0_2, 'name = "s1"\nlayers = 4\nenter = "decoalesce"  # <-\nsteps = 1'),
        "stages[1].enter",
        'add an enter = "coalesce" stage',
    ),
    "interpolate to an uncoalesced shape": (
        model(final=8)
        + stages(
            'name = "s0"\nlayers = 4\nsteps = 1',
            'name = "s1"\nlayers = 4\nenter = "coalesce"\nsteps = 1',  # width only: 4 x 128 -> 4 x 64
            'name = "s2"\nenter = "stack"\nlayers = 8\nsteps = 1',
            'name = "s3"\nlayers = 8\nenter = "interpolate"  # <-\nsteps = 1',
        ),
        "stages[3].enter",
        "nothing was coalesced from 8 layers × width 128; set layers/width to 4 layers × width 128",
    ),
    "alpha out of range": (
        model()
        + stages(
            S0,
            'name = "s1"\nlayers = 2\nenter = "coalesce"\nsteps = 1',
            'name = "s2"\nlayers = 4\nenter = "interpolate"\nalpha = 1.5  # <-\nsteps = 1',
        ),
        "stages[2].alpha",
        "must be in [0, 1]",
    ),
    "last stage depth": (
        model(final=6) + stages('name = "s0"\nlayers = 4  # <-\nsteps = 1'),
        "stages[0].layers",
        "model.final_layers = 6",
    ),
    "last stage width": (
        model() + stages(S0, '  # <-\nname = "s1"\nlayers = 4\nenter = "coalesce"\nsteps = 1'),
        "stages[1].width",
        "full width",
    ),
    "seq_len too long": (
        model() + "\n[data]\nseq_len = 256  # <-\n" + stages(S0),
        "data.seq_len",
        "model.max_seq_len = 128",
    ),
    "val_fraction 1": (
        model() + "\n[data]\nval_fraction = 1.0  # <-\n" + stages(S0),
        "data.val_fraction",
        "[0, 1)",
    ),
    "duplicate stage names": (
        model() + stages(S0, 'name = "s0"  # <-\nlayers = 4\nsteps = 1'),
        "stages[1].name",
        'duplicate stage name "s0" (also stages[0])',
    ),
    "alpha on a stack": (
        model()
        + stages(S0_2, 'name = "s1"\nlayers = 4\nenter = "stack"\nalpha = 0.5  # <-\nsteps = 1'),
        "stages[1].alpha",
        'only applies to enter = "interpolate"',
    ),
}


def marked_line(text: str) -> int:
    lines = text.splitlines()
    n = next(i for i, line in enumerate(lines, 1) if "# <-" in line)
    # a marker alone on its line points at the [[stages]] header just above it
    return n - 1 if lines[n - 1].strip() == "# <-" else n


@pytest.mark.parametrize("case", list(INVALID), ids=list(INVALID))
def test_invalid_plan(case: str) -> None:
    text, key, phrase = INVALID[case]
    with pytest.raises(PlanError) as info:
        loads_plan(text, source="plan.toml")
    err = info.value
    message = str(err)
    line = marked_line(text)
    assert message.startswith(f"plan.toml:{line}: {key}: "), message
    assert phrase in message, message
    assert "\n" not in message and "; " in message
    assert (err.source, err.line, err.key) == ("plan.toml", line, key)


def test_invalid_plans_are_many() -> None:
    assert len({key for _, key, _ in INVALID.values()}) >= 12


def test_all_problems_listed() -> None:
    text = (
        model().replace("num_heads = 4", "num_heads = 3")
        + '\n[optim]\nlr = 0\nschedule = "step"\n'
        + stages(
            'name = "a"\nlayers = 4\nsteps = 1', 'name = "a"\nlayers = 4\ntrain = "new"\nsteps = 1'
        )
    )
    with pytest.raises(PlanError):
        loads_plan(text)
    plan = loads_plan(text, validate=False)  # a draft, as the editor opens it
    problems = plan_problems(plan, source="p.toml", text=text)
    assert [p.key for p in problems] == [
        "model.hidden_size",
        "optim.lr",
        "optim.schedule",
        "stages[1].name",
        "stages[1].train",
    ]
    assert all(p.line is not None for p in problems)
    with pytest.raises(PlanError) as info:
        validate_plan(plan)
    assert str(info.value).startswith("<plan>: model.hidden_size: ")


def test_plan_built_in_code_has_no_line() -> None:
    plan = Plan(name="x", model=ModelSpec(final_layers=2), stages=[Stage("a", 2, 5)])
    with pytest.raises(PlanError) as info:
        validate_plan(plan, source="<plan>")
    assert str(info.value) == (
        '<plan>: stages[0].enter: the first stage must build the model, got "continue"; '
        'use enter = "init" (or leave enter out)'
    )
    plan.stages[0].enter = "init"
    validate_plan(plan)


VCYCLE3 = model(final=8) + stages(
    'name = "full"\nlayers = 8\nsteps = 10',
    'name = "l2"\nenter = "coalesce"\nlayers = 4\nsteps = 10',
    'name = "l3"\nenter = "coalesce"\nlayers = 2\npairing = "half"\nsteps = 10',
    'name = "up2"\nenter = "decoalesce"\nlayers = 4\npairing = "half"\nsteps = 10',
    'name = "up1"\nenter = "interpolate"\nlayers = 8\nalpha = 0.5\nsteps = 10',
    'name = "grow"\nenter = "stack"\nlayers = 8\ntrain = "top:2"\nsteps = 1',
)


def test_vcycle_shapes() -> None:
    text = VCYCLE3.rsplit("\n[[stages]]", 1)[0] + "\n"  # drop the invalid last stage
    plan = loads_plan(text)
    shapes = resolve_shapes(plan)
    got = [
        (s.layers, s.width, s.heads, s.intermediate, s.prev_layers, s.prev_width, s.added_layers)
        for s in shapes
    ]
    assert got == [
        (8, 128, 4, 512, 0, 128, 8),
        (4, 64, 2, 256, 8, 128, 0),
        (2, 32, 1, 128, 4, 64, 0),
        (4, 64, 2, 256, 2, 32, 2),
        (8, 128, 4, 512, 4, 64, 4),
    ]
    assert [s.trainable_layers for s in shapes][2] == [0, 1]
    # the level snapshots the backend keeps: opened by coalesce, closed by the return to them
    assert [s.level for s in shapes] == [None, 1, 2, 2, 1]
    assert [s.open_levels for s in shapes] == [(), (1,), (1, 2), (1,), ()]


def test_return_with_another_pairing_than_its_coalesce_is_rejected() -> None:
    text = VCYCLE3.rsplit("\n[[stages]]", 1)[0] + "\n"
    problems = text_problems(
        text.replace(
            'pairing = "half"\nsteps = 10\n\n[[stages]]\nname = "up1"',
            'steps = 10\n\n[[stages]]\nname = "up1"',
        )
    )
    assert [p.key for p in problems] == ["stages[3].pairing"]
    assert (
        'differs from the pairing of the coalesce it returns to (stages[2]: "half")'
        in problems[0].problem
    )
    assert 'set pairing = "half"' in problems[0].problem
    assert problems[0].line is not None


def test_width_only_and_depth_only_coalesce() -> None:
    text = model(final=4) + stages(
        'name = "a"\nlayers = 4\nsteps = 1',
        'name = "w"\nenter = "coalesce"\nlayers = 4\nsteps = 1',  # width only
        'name = "d"\nenter = "coalesce"\nlayers = 2\nwidth = 64\nsteps = 1',  # depth only
        'name = "up-d"\nenter = "decoalesce"\nlayers = 4\nsteps = 1',  # back to 4 × 64
        'name = "up-w"\nenter = "interpolate"\nlayers = 4\nsteps = 1',  # back to 4 × 128
    )
    shapes = resolve_shapes(loads_plan(text))
    assert [(s.layers, s.width) for s in shapes] == [(4, 128), (4, 64), (2, 64), (4, 64), (4, 128)]


def test_stack_shapes_and_new_layers() -> None:
    shapes = resolve_shapes(load_plan(sample_plan("cpu-demo")))
    assert [(s.layers, s.added_layers, s.trainable_layers) for s in shapes] == [
        (2, 2, [0, 1]),
        (4, 2, [2, 3]),
        (4, 0, [0, 1, 2, 3]),
    ]


def test_resolve_shapes_is_best_effort_on_invalid_plans() -> None:
    plan = Plan(
        name="x", stages=[Stage("a", 2, 1, enter="init"), Stage("b", 3, 1, enter="coalesce")]
    )
    assert [s.layers for s in resolve_shapes(plan)] == [2, 3]


def test_replace_remaining_stages() -> None:
    plan = load_plan(sample_plan("cpu-demo"))
    before = copy.deepcopy(plan)
    new = [
        Stage("grow-3", 3, 40, enter="stack", train="new"),
        Stage("grow-4", 4, 40, enter="stack", train="top:2"),
        Stage("final", 4, 20),
    ]
    edited = replace_remaining_stages(plan, 1, new)
    assert plan == before  # not mutated
    assert edited.stages[0] == plan.stages[0]
    assert [s.name for s in edited.stages] == ["shallow", "grow-3", "grow-4", "final"]
    assert edited.total_steps == plan.stages[0].steps + 100

    with pytest.raises(PlanError) as info:
        replace_remaining_stages(plan, 1, [Stage("grow-3", 3, 40, enter="stack")])
    assert str(info.value).startswith("<edit_stages>: stages[1].layers: the last stage must end at")
    with pytest.raises(PlanError, match=r"stages\[2\]\.name: duplicate stage name"):
        replace_remaining_stages(plan, 2, [Stage("shallow", 4, 10)])
    with pytest.raises(PlanError, match="outside 0..3"):
        replace_remaining_stages(plan, 4, [])
    assert plan == before
