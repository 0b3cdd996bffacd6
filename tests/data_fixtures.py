"""The smallest valid plan around a `[data]` table, for tests of data sources and their
checks: one GPT-2 stage, so what a test varies is only the data it names."""

from __future__ import annotations

DATA_PLAN = """
name = "p"
[model]
family = "gpt2"
hidden_size = 32
num_heads = 2
intermediate_size = 64
max_seq_len = 32
final_layers = 1
[data]
{data}
[[stages]]
name = "only"
layers = 1
steps = {steps}
"""


def data_plan(data: str, steps: int = 5) -> str:
    """The plan with `data` as the body of its `[data]` table."""
    return DATA_PLAN.format(data=data, steps=steps)


def source_plan(source: str) -> str:
    """The plan reading `source` with a small trained tokenizer."""
    return data_plan(f'source = "{source}"\ntokenizer = "train:300"')
