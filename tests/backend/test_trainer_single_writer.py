"""One writer for the Trainer: only backend/loop/engine.py assigns to a Trainer's state.

Sub-steps (entering a stage, a step, a restore, a rollback, a command) evaluate and
return values that the engine applies, so whoever reads the engine sees every change
of the run's state in one file. This test parses every module of the package and
fails on an assignment, augmented assignment, deletion or `setattr` whose target is
rooted at a Trainer object anywhere else (`t.model = …`, `t.pos.step += 1`,
`t.levels[i] = …`, `setattr(trainer, …)`).

What counts as a Trainer object, per function scope (closures inherit):
* a name annotated with the engine's `Trainer` (imported from backend/loop/engine.py,
  under any alias) or with a Protocol standing for it (a class named `Trainer`, or
  one whose name ends in `Host` or `Reads`: every Protocol of the backend whose members
  are all the Trainer's is named so, `test_every_view_of_the_trainer_is_named_as_one`);
* the name `trainer` in a module that imports the engine's `Trainer` or defines such
  a Protocol (a Lightning or Hugging Face `trainer` elsewhere is not ours);
* `self` inside a class named `Trainer` or one that derives from such a Protocol.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "growcockpit"
WRITER = PACKAGE / "backend" / "loop" / "engine.py"
ENGINE_MODULE = "growcockpit.backend.loop.engine"
VIEW_SUFFIXES = ("Host", "Reads")  # the names of Protocols that stand for the Trainer


@dataclass(frozen=True)
class Write:
    path: str
    line: int
    text: str


def _names_in(annotation: ast.expr | None) -> set[str]:
    """Every identifier an annotation mentions (strings parsed: `"Trainer | None"`)."""
    if annotation is None:
        return set()
    found: set[str] = set()
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                found |= _names_in(ast.parse(node.value, mode="eval").body)
            except SyntaxError:
                continue
    return found


def _root(target: ast.expr) -> str | None:
    """The name an attribute/subscript chain hangs from (`t` in `t.pos.step`), if any."""
    node = target
    saw_access = False
    while isinstance(node, ast.Attribute | ast.Subscript):
        node, saw_access = node.value, True
    return node.id if saw_access and isinstance(node, ast.Name) else None


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        flat: list[ast.expr] = []
        for target in node.targets:
            flat.extend(_flatten(target))
        return flat
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        return _flatten(node.target)
    if isinstance(node, ast.Delete):
        return [t for target in node.targets for t in _flatten(target)]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("setattr", "delattr")
        and node.args
    ):
        first = node.args[0]
        return (
            [ast.Attribute(value=first, attr="?", ctx=ast.Store())]
            if isinstance(first, ast.Name)
            else []
        )
    return []


def _flatten(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, ast.Tuple | ast.List):
        return [t for element in target.elts for t in _flatten(element)]
    if isinstance(target, ast.Starred):
        return _flatten(target.value)
    return [target]


class _Finder:
    def __init__(self, path: Path, tree: ast.Module) -> None:
        self.path = path
        self.shown = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
        self.lines = path.read_text(encoding="utf-8").splitlines()
        self.types = self._trainer_types(tree)
        self.by_name = bool(self.types - {"*Host"}) or self._defines_host(tree)
        self.writes: list[Write] = []

    @staticmethod
    def _trainer_types(tree: ast.Module) -> set[str]:
        """Local names of the engine's Trainer and of Protocols that stand for it."""
        types: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == ENGINE_MODULE:
                types |= {a.asname or a.name for a in node.names if a.name == "Trainer"}
            elif isinstance(node, ast.ImportFrom):
                types |= {
                    a.asname or a.name
                    for a in node.names
                    if a.name == "Trainer" and (node.module or "").startswith("growcockpit.backend")
                }
            elif isinstance(node, ast.ClassDef) and node.name == "Trainer":
                types.add("Trainer")
        return types

    @staticmethod
    def _defines_host(tree: ast.Module) -> bool:
        return any(
            isinstance(n, ast.ClassDef) and n.name.endswith(VIEW_SUFFIXES) for n in ast.walk(tree)
        )

    def is_type(self, annotation: ast.expr | None) -> bool:
        names = _names_in(annotation)
        return bool(names & self.types) or any(n.endswith(VIEW_SUFFIXES) for n in names)

    def scan(self, body: list[ast.stmt], trainers: set[str], in_trainer_class: bool) -> None:
        for stmt in body:
            self.visit(stmt, trainers, in_trainer_class)

    def visit(self, node: ast.AST, trainers: set[str], in_trainer_class: bool) -> None:
        if isinstance(node, ast.ClassDef):
            bases = set().union(*(_names_in(b) for b in node.bases)) if node.bases else set()
            holds = (
                node.name == "Trainer"
                or bool(bases & self.types)
                or any(b.endswith(VIEW_SUFFIXES) for b in bases)
            )
            self.scan(node.body, trainers - {"self"}, holds)
            return
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            inner = set(trainers)
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
            every += [a for a in (args.vararg, args.kwarg) if a is not None]
            for arg in every:
                inner.discard(arg.arg)  # a parameter shadows an outer trainer
                if self.is_type(arg.annotation) or (self.by_name and arg.arg == "trainer"):
                    inner.add(arg.arg)
            if in_trainer_class and every and every[0].arg == "self":
                inner.add("self")
            body: list[ast.stmt] = (
                node.body if isinstance(node.body, list) else [ast.Expr(node.body)]
            )
            for stmt in body:  # annotated locals first: `trainer: Trainer | None = None`
                for sub in ast.walk(stmt):
                    if not isinstance(sub, ast.AnnAssign) or not isinstance(sub.target, ast.Name):
                        continue
                    if self.is_type(sub.annotation):
                        inner.add(sub.target.id)
            self.scan(body, inner, False)
            return
        for target in _targets(node):
            root = _root(target)
            if root is not None and root in trainers:
                line = getattr(node, "lineno", 0)
                self.writes.append(Write(self.shown, line, self.lines[line - 1].strip()))
        for child in ast.iter_child_nodes(node):
            self.visit(child, trainers, in_trainer_class)


def trainer_writes(paths: list[Path]) -> list[Write]:
    """Every write to a Trainer's state in `paths` (module doc)."""
    writes: list[Write] = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        finder = _Finder(path, tree)
        module_trainers = {"trainer"} if finder.by_name else set()
        finder.scan(tree.body, module_trainers, False)
        writes.extend(finder.writes)
    return writes


def test_only_the_engine_writes_the_trainer() -> None:
    modules = sorted(p for p in PACKAGE.rglob("*.py") if p != WRITER)
    writes = trainer_writes(modules)
    assert writes == [], "\n".join(f"{w.path}:{w.line}: {w.text}" for w in writes)


def test_the_check_sees_each_kind_of_write(tmp_path: Path) -> None:
    """The finder is no test that cannot fail: each way of writing a Trainer is caught."""
    module = tmp_path / "writer.py"
    module.write_text(
        "from growcockpit.backend.loop.engine import Trainer as Engine\n"
        "from typing import Protocol\n"
        "class StageHost(Protocol):\n"
        "    model: object\n"
        "def a(t: Engine) -> None:\n"
        "    t.model = 1\n"
        "def b(t: 'StageHost') -> None:\n"
        "    t.pos.step += 1\n"
        "def c(trainer) -> None:\n"
        "    trainer.levels[0] = 2\n"
        "    def handler() -> None:\n"
        "        trainer.stop_requested = True\n"
        "def d(x: Engine) -> None:\n"
        "    setattr(x, 'paused', True)\n"
        "    change, x.sharded_change = x.sharded_change, None\n"
        "def e() -> None:\n"
        "    trainer: Engine | None = None\n"
        "    trainer.stopping = True\n"
        "def reads(t: Engine, other: int) -> None:\n"
        "    model = t.model\n"
        "    other.thing = t.pos\n"
        "    t.report.emit(model)\n",
        encoding="utf-8",
    )
    lines = [w.line for w in trainer_writes([module])]
    assert lines == [6, 8, 10, 12, 14, 15, 18]


def _trainer_members() -> set[str]:
    """Every attribute (`self.x = …`) and method or property of engine.py's Trainer."""
    tree = ast.parse(WRITER.read_text(encoding="utf-8"))
    (trainer,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Trainer"]
    names = {n.name for n in trainer.body if isinstance(n, ast.FunctionDef)}
    for node in ast.walk(trainer):
        for target in _targets(node):
            owner = target.value if isinstance(target, ast.Attribute) else None
            if (
                isinstance(owner, ast.Name)
                and owner.id == "self"
                and isinstance(target, ast.Attribute)
            ):
                names.add(target.attr)
    return names


def _protocol_members(cls: ast.ClassDef) -> set[str]:
    members = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    return members | {
        n.target.id
        for n in cls.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }


def test_every_view_of_the_trainer_is_named_as_one() -> None:
    """A Protocol of the backend that names only the Trainer's members stands for the
    Trainer: it must end in Host or Reads, so that the writer check above sees through it."""
    trainer = _trainer_members()
    assert {"model", "pos", "plan", "run", "restore", "loop"} <= trainer
    views, misnamed = [], []
    for path in sorted((PACKAGE / "backend").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            if "Protocol" not in set().union(*(_names_in(b) for b in node.bases)):
                continue
            members = _protocol_members(node)
            if members and members <= trainer:
                views.append(node.name)
                if not node.name.endswith(VIEW_SUFFIXES):
                    misnamed.append(f"{path.relative_to(ROOT)}: {node.name}")
    assert misnamed == []
    assert {"StepHost", "CommandHost", "StageReads", "MeasureReads"} <= set(views)
