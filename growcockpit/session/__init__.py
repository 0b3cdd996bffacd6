"""What a cockpit knows of a run, without Textual: the session, the event folds, the catalog.

`RunSession` owns a run's I/O (the event tail, the controller role, commands over the
control socket) and `RunState` its folded history; the catalog and attach index list
runs for Home; `index_keeper` is the cache `growcockpit train` keeps fresh beside the
backend. The screens in `growcockpit.ui` draw this; scripts, benchmarks and tests use it
headless. An import-linter contract keeps Textual (and torch) out of this package.
"""
