"""The training backend: data, model, the stage engine and its run directory.

Knows torch, transformers, datasets, `plan`, `protocol` and `grow`; never Textual.
"""
