"""What the designer's status lines say: its title, its plan file, and the plan's problems.

Pure functions (no Textual) of the plan, its path, the validator's problems
(`plan_problems`) and the fields' own parse errors, so the screen only routes
their results to its widgets: each problem to its field, ⚠ to its stage row,
and one summary line. Problem keys are the validator's: `name`,
`model.d_model`, `stages[2].steps`.
"""

from __future__ import annotations

import re
from pathlib import Path

from growcockpit.plan import PlanError
from growcockpit.plan.memory import DEFAULT_GPU_GB, DEFAULT_RANKS
from growcockpit.plan.memory_show import memory_summary
from growcockpit.plan.types import Plan
from growcockpit.session.plan_drafts import display_path, is_sample

_STAGE_KEY = re.compile(r"^stages\[(\d+)\](?:\.(\w+))?")


def title_line(plan: Plan, path: Path | None, dirty: bool, locked: int | None) -> str:
    """The plan's name, ● when edited, and where it lives; `locked`: editing a running run."""
    mark = " ● modified" if dirty else ""
    if locked is not None:
        head = f"{plan.name}: edit the stages after stage {locked} (ctrl+s sends them to the run)"
    else:
        head = plan.name
    where = "" if locked is not None else f"  · {display_path(path)}"
    return f"{head}{mark}{where}"


def memory_line(plan: Plan) -> str:
    """Each rank's memory at the plan's largest stage against one GPU, at `plan show`'s
    defaults (8 ranks, 80 GB; `plan show --ranks N --gpu-gb G` prices others)."""
    return memory_summary(plan, DEFAULT_RANKS, DEFAULT_GPU_GB)


def path_line(path: Path | None) -> str:
    """The plan file, and a word that saving a shipped sample makes the user's own copy."""
    shown = display_path(path)
    if is_sample(path):
        shown += "  (shipped sample: save makes your copy)"
    return f"plan file: {shown}"


def saved_note(n_problems: int) -> str:
    """Appended to "saved …": a plan saved with problems is a draft."""
    n = n_problems
    return f" (a draft with {n} problem{'s' if n > 1 else ''})" if n else ""


Listed = list[tuple[str, str]]  # (key, problem), every one, in the validator's order


def listed_problems(problems: list[PlanError], field_errors: dict[str, str]) -> Listed:
    """Every problem of the plan being edited, the list `plan validate` prints for the saved
    file: the validator's, each on its own even when two share a key (a stage's layers
    breaking its operator's rule and the final depth), except where a field's own parse
    error stands for what the validator said of that field's last good value."""
    return [*field_errors.items()] + [
        (err.key, err.problem) for err in problems if err.key not in field_errors
    ]


def errors_by_key(problems: list[PlanError], field_errors: dict[str, str]) -> dict[str, str]:
    """What each field shows: every problem of its key, one a line."""
    by_key: dict[str, str] = {}
    for key, problem in listed_problems(problems, field_errors):
        by_key[key] = f"{by_key[key]}\n{problem}" if key in by_key else problem
    return by_key


def scoped_errors(by_key: dict[str, str], prefix: str) -> dict[str, str]:
    """The problems under `prefix` (`stages[1].`, `model.`), keyed by the field name."""
    return {k[len(prefix) :]: v for k, v in by_key.items() if k.startswith(prefix)}


SECTION_WIDE = "*"  # a section_errors key: the problem is the whole section's


def section_errors(by_key: dict[str, str], section: str) -> dict[str, str]:
    """The problems of one form section; `plan` owns the top-level keys."""
    if section == "plan":
        return {k: v for k, v in by_key.items() if "." not in k and "[" not in k and k != "budget"}
    out = scoped_errors(by_key, f"{section}.")
    if section in by_key:  # about the section as a whole ("set exactly one of …")
        out[SECTION_WIDE] = by_key[section]
    return out


def bad_stages(by_key: dict[str, str]) -> set[int]:
    """The stage rows to mark ⚠."""
    return {int(m.group(1)) for k in by_key if (m := _STAGE_KEY.match(k))}


def problems_line(listed: Listed, plan: Plan | None, remaining: bool) -> str:
    """The summary under the tabs: ready, or the count (`plan validate`'s) and the first."""
    n = len(listed)
    if n == 0:
        what = "send the edited stages" if remaining else "launch"
        return f"✔ valid: ready to {what}"
    first_key, first = listed[0]
    more = f" (+{n - 1} more: see ⚠ rows and fields)" if n > 1 else ""
    return f"⚠ {n} problem{'s' if n > 1 else ''}: {where(first_key, plan)}: {first}{more}"


def blocked_text(what: str, listed: Listed, plan: Plan | None) -> str:
    """Why `what` (launch, send the stages) cannot happen now; empty when it can."""
    n = len(listed)
    if not n:
        return ""
    first = listed[0]
    return (
        f"cannot {what}: {n} problem{'s' if n > 1 else ''}; "
        f"first: {where(first[0], plan)}: {first[1]}"
    )


def where(key: str, plan: Plan | None) -> str:
    """A problem key as the user reads it: `stage 2 (grow) steps` rather than `stages[1].steps`."""
    m = _STAGE_KEY.match(key)
    if m and plan is not None:
        i = int(m.group(1))
        name = plan.stages[i].name if i < len(plan.stages) else "?"
        field = f" {m.group(2)}" if m.group(2) else ""
        return f"stage {i + 1} ({name}){field}"
    return key or "plan"
