"""The help pages (`?`) of the designer and the dashboard: what each screen is for.

Kept apart from the screens so their modules hold only layout, keys and wiring;
`HelpScreen` adds each screen's live key bindings under the text.
"""

DESIGNER_HELP = """\
Design a growing-transformer schedule: each row of the table is a stage, built by its
`enter` operator (init, stack, coalesce, …) and trained for `steps` with the layers its
`train` policy picks (all, new, none, top:K). Move through the rows with ↑/↓; the
fields under the table edit the highlighted stage. Tab moves between fields, Esc
goes back to the table (on the other tabs, to the tab bar). Tabs 1–4: Stages, Plan &
model (name, seed, [model], [budget]), Data and Optimizer. Problems show under each field as you type (the same checks
as `growcockpit plan validate`). The timeline draws each stage's depth: trainable,
new and frozen layers in different colours. The cost estimate compares the plan's
compute with training the final model at full depth for as many steps.
Stages, on the Stages tab's table (in a field these keys are letters): add one after the
highlighted row (a), duplicate it (d), remove it (x or Delete), move it up or down ([ and
]). ctrl+s saves the plan (editing a live run's remaining
stages, ctrl+s sends them to the run instead), S saves it as a new file, l launches it;
Esc goes back (asking first when there are unsaved changes)."""

DASHBOARD_HELP = """\
The live cockpit of one run. Everything here is rebuilt from the run's events.jsonl,
so leaving (q) or losing SSH never touches training: `growcockpit attach RUN` comes back.

Loss: the train curve is smoothed by a time-weighted, debiased EMA (TWEMA, as W&B does;
the factor is in the title, < and > change it) by default; r shows the raw loss. x
cycles every plot's x axis: step, tokens, training time (pauses and evaluations left
out), estimated FLOPs (the plan's cost model); [ and ] halve and double the window
shown (the latest part), 0 shows it all. Vertical lines mark stage changes, grows,
pauses, LR changes and rollbacks on every axis. v plots LR (warm-up ends, wsd decay), grad
norm, update ratio, step ms or tokens/s under the loss; z: steps A-B; , and . a cursor.
Layers: one row per layer (trainable, frozen, or new from the last grow): grad norm,
update ratio ‖Δθ‖/‖θ‖, and fwd/bwd ms as the median of the last n timing samples (they
restart when the stage or the layer's frozen state changes); and one layers × time
heatmap of grad norms, grouped by stage.
Tabs 1–7: the console (6) follows backend.log (stdout, stderr); samples (7), the model's
text at evaluations ([samples]; ←/→ step). / filters by a regular expression: the layer rows and the heatmap's (index,
layer N, state, health), the event logs, the console, and the plots' series by name
(train/loss, val/loss, tokens/s; grad norm keeps every heatmap row); a plot it leaves
empty says so. Esc clears it (else goes Home). N and T set the run's note and tags
and B pins a baseline run (plotted; the border says how much sooner this run got to
its loss). Commands (p pause/resume, g advance,
c checkpoint, s stop, e edit the remaining stages, l scale the LR) wait for the
backend's answer at its next step and show it. b rolls back to a checkpoint (asks; empty: the latest), dropping the
plots past it (↶); after a NaN or spike pause it offers the last good one at a lower LR
scale. Only one cockpit at a time controls a run; others are read-only.
The tab, smoothing, x axis and v plot are remembered per run."""

# A key's meaning in the `?` key list (help_keys.py), by action, where the footer's one
# word is too short to say it; other keys read with their binding's description. At most
# 30 characters, so the list fits three columns at 160 wide and two at 80.
KEY_MEANINGS: dict[str, str] = {
    "pause_resume": "pause/resume at the next step",
    "advance": "enter the next stage now",
    "checkpoint": "write a checkpoint now",
    "stop": "checkpoint, then end the run",
    "edit_stages": "edit the stages still to come",
    "scale_lr": "scale the learning rate",
    "rollback": "roll back to a checkpoint",
    "toggle_raw": "raw / smoothed train loss",
    "leave": "leave; training goes on",
    "home": "clear the filter, else Home",
    "cycle_axis": "x axis: step/tokens/time/FLOPs",
    "zoom(1)": "zoom in (the latest half)",
    "zoom(-1)": "zoom out",
    "zoom(0)": "show the whole run",
    "step_range": "zoom to steps A-B",
    "cursor(-1)": "cursor left (values: borders)",
    "cursor(1)": "cursor right",
    "cycle_scalar": "plot under the loss: LR, grad…",
    "filter": "filter by a regular expression",
    "note": "the run's note",
    "tags": "the run's tags",
    "pin_baseline": "pin a baseline run to plot",
    "next_target": "next target run",
    "toggle_diff": "verdicts / config diff",
    "edit_stages('add')": "add a stage after this one",
    "edit_stages('duplicate')": "duplicate this stage",
    "edit_stages('remove')": "remove this stage",
    "move(-1)": "move this stage up",
    "move(1)": "move this stage down",
    "save": "save the plan",
    "send": "send the stages to the run",
    "save_as": "save as a new file",
    "launch": "launch the plan",
    "back": "back (asks if unsaved)",
    "help": "this help",
    "cycle_theme": "next theme",
    "continue_winner": "continue the winner (asks)",
    "stop_race": "stop the race (asks)",
    "refresh": "read again now",
}
