"""Plans: typed stage schedules, TOML load/save, validation, shapes and cost.

Pure stdlib + tomlkit: never imports torch, transformers or textual.
"""

from __future__ import annotations

from growcockpit.plan.budget import FittedBudget, fill_index, fit_budget, fitted_plan
from growcockpit.plan.cost import PlanCost, StageCost, default_head_cost, estimate_cost, step_cost
from growcockpit.plan.edit import replace_remaining_stages
from growcockpit.plan.errors import PlanError
from growcockpit.plan.load import (
    dict_problems,
    load_plan,
    loads_plan,
    parse_stages,
    plan_from_dict,
    text_problems,
)
from growcockpit.plan.save import dump_plan, plan_to_dict, save_plan
from growcockpit.plan.shapes import StageShape, resolve_shapes
from growcockpit.plan.show import format_plan
from growcockpit.plan.types import (
    BudgetSpec,
    CheckpointSpec,
    DataSpec,
    LoggingSpec,
    MetricsSpec,
    ModelSpec,
    OptimSpec,
    Plan,
    Stage,
    trainable_layer_ids,
)
from growcockpit.plan.validate import plan_problems, validate_plan

__all__ = [
    "BudgetSpec",
    "CheckpointSpec",
    "DataSpec",
    "FittedBudget",
    "LoggingSpec",
    "MetricsSpec",
    "ModelSpec",
    "OptimSpec",
    "Plan",
    "PlanCost",
    "PlanError",
    "Stage",
    "StageCost",
    "StageShape",
    "default_head_cost",
    "dict_problems",
    "dump_plan",
    "estimate_cost",
    "fill_index",
    "fit_budget",
    "fitted_plan",
    "format_plan",
    "load_plan",
    "loads_plan",
    "parse_stages",
    "plan_from_dict",
    "plan_problems",
    "plan_to_dict",
    "replace_remaining_stages",
    "resolve_shapes",
    "save_plan",
    "step_cost",
    "text_problems",
    "trainable_layer_ids",
    "validate_plan",
]
