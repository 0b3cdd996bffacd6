"""Screens are composed, not inherited: each screen class stands on Textual's own `Screen`
or `ModalScreen`, and its parts (widgets that post messages up, or plain controllers in
growcockpit/session) are attributes it holds, never base classes it extends. The
dashboard and the designer were chains (`DashboardScreen -> DashboardViews ->
DashboardCommands -> Screen`, `DesignerScreen -> FileChecking -> DesignerSaving ->
Screen`) held together by pass-through properties (`state` for `session.state`, ...)."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

from textual.screen import Screen

import growcockpit.ui as ui_pkg
import growcockpit.ui.screens as screens_pkg

UI_ROOT = Path(ui_pkg.__file__).parent


def screen_classes() -> list[type[Screen[object]]]:
    found = []
    for info in pkgutil.iter_modules(screens_pkg.__path__):
        module = importlib.import_module(f"{screens_pkg.__name__}.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Screen) and cls.__module__ == module.__name__:
                found.append(cls)
    return found


def test_no_screen_extends_a_class_of_ours() -> None:
    chained = {
        cls.__name__: [
            b.__name__ for b in cls.__mro__[1:] if b.__module__.startswith("growcockpit")
        ]
        for cls in screen_classes()
    }
    assert {"DashboardScreen", "DesignerScreen"} <= set(chained)
    assert {name: bases for name, bases in chained.items() if bases} == {}


def _pass_through(node: ast.FunctionDef) -> bool:
    """A property whose body only returns `self.<part>.<attribute>`."""
    body = node.body[1:] if ast.get_docstring(node) else node.body
    return (
        any(isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list)
        and len(body) == 1
        and isinstance(body[0], ast.Return)
        and isinstance(body[0].value, ast.Attribute)
        and isinstance(body[0].value.value, ast.Attribute)
        and isinstance(body[0].value.value.value, ast.Name)
        and body[0].value.value.value.id == "self"
    )


def test_no_pass_through_properties_in_the_ui() -> None:
    found = [
        f"{path.relative_to(UI_ROOT)}:{node.lineno} {node.name}"
        for path in sorted(UI_ROOT.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and _pass_through(node)
    ]
    assert found == []


def test_the_pass_through_check_sees_one() -> None:
    code = "class A:\n    @property\n    def state(self):\n        return self.session.state\n"
    (node,) = [n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.FunctionDef)]
    assert _pass_through(node)
