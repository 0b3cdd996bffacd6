"""The family adapter: one spec per family, no fallbacks, the plan table and the torch registry agree."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from grow_fixtures import FAMILIES, tiny_batch, tiny_model
from repo_paths import REPO

from growcockpit.backend.loop.forward import StagedForward
from growcockpit.families import FAMILY_SPECS, spec_for, spec_of
from growcockpit.grow import embedding_modules, get_layers, head_parameters
from growcockpit.plan.families import FAMILY_FACTS, UnknownFamily, family_facts


def test_plan_table_and_torch_registry_name_the_same_families() -> None:
    assert tuple(FAMILY_FACTS) == tuple(FAMILY_SPECS) == FAMILIES
    for name, spec in FAMILY_SPECS.items():
        assert spec.facts is family_facts(name)
        assert spec.name == name


def test_unknown_family_is_refused_naming_the_registered_ones() -> None:
    with pytest.raises(UnknownFamily, match="one of bert, gpt2, llama"):
        spec_for("t5")
    with pytest.raises(UnknownFamily, match='unknown model family "t5"'):
        family_facts("t5")


def test_no_family_name_tests_outside_the_adapter() -> None:
    """Family knowledge lives in growcockpit/families and plan/families.py only."""
    pattern = re.compile(r"family *(==|!=)|== *\"(bert|gpt2|llama)\"")
    offenders = []
    for path in sorted((REPO / "growcockpit").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith("growcockpit/families/") or rel == "growcockpit/plan/families.py":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{rel}:{n}: {line.strip()}")
    assert offenders == []


@pytest.mark.parametrize("family", FAMILIES)
def test_spec_of_a_built_model_is_its_family(family: str) -> None:
    model = tiny_model(family, layers=2)
    assert spec_of(model) is spec_for(family)
    assert len(get_layers(model)) == 2


@pytest.mark.parametrize("family", FAMILIES)
def test_embeddings_and_head_cover_every_parameter_outside_the_blocks(family: str) -> None:
    model = tiny_model(family, layers=2)
    block_ids = {id(p) for p in get_layers(model).parameters()}
    emb_ids = {id(p) for m in embedding_modules(model) for p in m.parameters()}
    head_ids = {id(p) for p in head_parameters(model)}
    every = {id(p) for p in model.parameters()}
    assert not (emb_ids & head_ids) and not (block_ids & (emb_ids | head_ids))
    assert every == block_ids | emb_ids | head_ids


@pytest.mark.parametrize("family", FAMILIES)
def test_staged_forward_equals_the_transformers_model(family: str) -> None:
    """The spec's embed / block call / head give the stock model's loss (eval: no dropout)."""
    model = tiny_model(family, layers=3).eval()
    batch = tiny_batch(family)
    with torch.no_grad():
        staged = StagedForward(0, True).loss(model, batch)
        stock = model(input_ids=batch.input_ids, labels=batch.labels).loss
    torch.testing.assert_close(staged, stock, rtol=1e-5, atol=1e-5)


def test_unknown_family_in_a_plan_is_one_line_naming_the_registered_families(
    tmp_path: Path,
) -> None:
    plan = tmp_path / "p.toml"
    plan.write_text(
        'name = "p"\n[model]\nfamily = "t5"\n[[stages]]\nname = "a"\nlayers = 2\nsteps = 1\n'
    )
    out = subprocess.run(
        [sys.executable, "-m", "growcockpit", "plan", "validate", str(plan)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    text = out.stdout + out.stderr
    assert "Traceback" not in text
    assert re.search(r"p\.toml:3: model\.family: .*t5.*bert.*gpt2", text), text


def test_grouped_query_llama_staged_forward_equals_transformers() -> None:
    """Rotary embeddings passed per block and 2 query heads per kv head: the stock loss."""
    import dataclasses

    from grow_fixtures import FakeTokenizer, tiny_spec

    from growcockpit.backend.model import build_model

    torch.manual_seed(0)
    spec = dataclasses.replace(tiny_spec("llama"), num_kv_heads=2, rope_theta=500000.0)
    model = build_model(spec, 3, FakeTokenizer()).eval()  # type: ignore[arg-type]
    assert model.config.num_key_value_heads == 2
    batch = tiny_batch("llama")
    with torch.no_grad():
        staged = StagedForward(0, True).loss(model, batch)
        stock = model(input_ids=batch.input_ids, labels=batch.labels).loss
    torch.testing.assert_close(staged, stock, rtol=1e-5, atol=1e-5)


def test_a_run_imports_only_its_own_family() -> None:
    """The backend and a gpt2 spec load no BERT or Llama modeling code (seconds each)."""
    import subprocess
    import sys

    code = (
        "import sys, growcockpit.backend.run\n"
        "from growcockpit.families import FAMILY_SPECS, spec_for\n"
        "spec_for('gpt2')\n"
        "print(sorted(m for m in sys.modules if m.startswith('transformers.models.')"
        " and '.modeling_' in m and 'auto' not in m), FAMILY_SPECS.loaded())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["['transformers.models.gpt2.modeling_gpt2']", "['gpt2']"]
