"""The Samples tab: what the model wrote at an evaluation, prompt by prompt, and the keys to
step back through earlier evaluations (the run's `samples` events, folded by the session).

A causal LM's continuation follows its prompt in the validation colour; a masked LM's
filled words stand in their sentence, with each [MASK]'s likeliest tokens below it.
Which evaluation is shown is a `SamplesView` (session/samples_view.py).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from growcockpit.plan.samples import MASK
from growcockpit.protocol.samples_event import Samples, SampleText, percent
from growcockpit.session.fold.plan import StageInfo
from growcockpit.session.run_state import RunState
from growcockpit.session.samples_view import (
    SamplesView,
    decoding_text,
    empty_text,
    position_text,
)
from growcockpit.text.safe_text import terminal_safe
from growcockpit.ui.widgets.text_bits import colour

KEYS_HINT = "←/→ earlier/later evaluation · Home the first · End the latest"


def printable(text: str) -> str:
    """Model text as the terminal may print it: its line breaks kept, every other
    unprintable character (ESC, a bidirectional override) escaped."""
    return "\n".join(terminal_safe(line) for line in text.split("\n"))


def _stage_text(stages: list[StageInfo], index: int) -> str:
    name = stages[index].name if 0 <= index < len(stages) else ""
    return f"stage {index + 1}" + (f" {name}" if name else "")


class SamplesPanel(VerticalScroll, can_focus=True):
    BINDINGS = [
        Binding("left", "move(-1)", "Earlier", key_display="←"),
        Binding("right", "move(1)", "Later", key_display="→"),
        Binding("home", "first", "First", show=False),
        Binding("end", "latest", "Latest", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.view = SamplesView()
        self.history: list[Samples] = []
        self.stages: list[StageInfo] = []
        self.empty = ""
        self._drawn: tuple[object, ...] = ()

    def compose(self) -> ComposeResult:
        yield Static(id="samples-body")

    @property
    def shown(self) -> Samples | None:
        """The evaluation on screen (None: none yet)."""
        index = self.view.index(self.history)
        return None if index is None else self.history[index]

    def show_state(self, state: RunState) -> None:
        """Take the run's samples (under the session's lock) and redraw if they changed."""
        key = (state.samples_version, len(state.stages), bool(state.plan_dict))
        if key != self._drawn[:3]:
            self.history = list(state.samples)
            self.stages = list(state.stages)
            self.empty = empty_text(state.plan_dict, state.trainer)
        self._draw(key)

    def _draw(self, key: tuple[object, ...] | None = None) -> None:
        key = (*(key or self._drawn[:3]), self.view, self.size.width)
        if key == self._drawn:
            return
        self._drawn = key
        self.query_one("#samples-body", Static).update(self.render_text())
        self.border_subtitle = KEYS_HINT if len(self.history) > 1 else ""

    def render_text(self) -> Text:
        index = self.view.index(self.history)
        if index is None:
            return Text(self.empty, style="dim")
        ev = self.history[index]
        text = Text()
        text.append(position_text(index, len(self.history), self.view.step is None), "bold")
        text.append(f" · step {ev.step:,} · {terminal_safe(_stage_text(self.stages, ev.stage))}")
        text.append(f" · {decoding_text(ev)}\n", style="dim")
        for sample in ev.samples:
            text.append("\n")
            self._sample(text, sample, ev.kind == "masked")
        return text

    def _sample(self, text: Text, sample: SampleText, masked: bool) -> None:
        written = colour(self, "gc-val-line")
        if not masked:
            text.append(printable(sample.prompt), style="bold")
            text.append(
                printable(sample.text) or " (nothing: the end-of-text token came first)", written
            )
            text.append("\n")
            return
        pieces = printable(sample.prompt).split(MASK)
        text.append(pieces[0], style="bold")
        for i, piece in enumerate(pieces[1:]):
            row = sample.top_tokens[i] if i < len(sample.top_tokens) else []
            best = row[0] if row else MASK
            text.append(printable(best), style=f"bold underline {written}")
            text.append(piece, style="bold")
        text.append("\n")
        for i, (tokens, probs) in enumerate(zip(sample.top_tokens, sample.top_probs, strict=False)):
            guesses = " · ".join(
                f"{printable(t)} {percent(p)}" for t, p in zip(tokens, probs, strict=False)
            )
            text.append(f"  {MASK} {i + 1}: ", style="dim")
            text.append(guesses + "\n")

    # ---- keys -----------------------------------------------------------------
    def action_move(self, by: int) -> None:
        self.view = self.view.moved(self.history, by)
        self._draw()

    def action_first(self) -> None:
        self.view = self.view.first(self.history)
        self._draw()

    def action_latest(self) -> None:
        self.view = SamplesView()
        self._draw()
