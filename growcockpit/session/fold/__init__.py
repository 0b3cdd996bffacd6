"""Folds: what each event type does to a `RunState`, in small typed pieces.

`table.FOLDS` maps an event class to its handler; `RunState.apply` looks the
handler up there, so which events the cockpit understands is one explicit,
type-checked table rather than method names built from strings.
"""
