"""An `Input` that takes a burst of keys (a paste, tmux send-keys, a fast typist) in order.

Textual hands a printable key to the focused input at once, but a bound key (backspace,
ctrl+u, escape, tab) travels up the DOM first and is acted on when it comes back to the
app: in a burst, the digits typed after a BSpace land before it ("100", BSpace ×3, "2"
became "", not "2"), and an `l` typed after Esc lands in the field Esc was leaving (a
stage named "…l" instead of Launch). `FieldInput` acts on its own bindings (editing keys)
where the key arrives. A key bound further up (Esc, tab, enter on a form) runs its action
there too; the keys that follow it wait behind what that action scheduled (a focus move,
a screen) and then go to whatever has the focus.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input


class FieldInput(Input):
    _deferring = False

    async def _on_key(self, event: events.Key) -> None:
        if self._deferring or self.app.focused is not self:
            event.stop()
            event.prevent_default()
            self.app.call_later(self._deliver, event.key, event.character)
            return
        if event.is_printable:
            await super()._on_key(event)
            return
        own = [b for b in self._bindings.key_to_bindings.get(event.key, ()) if not b.priority]
        if own:
            event.stop()
            event.prevent_default()
            await self.run_action(own[0].action)
            return
        # bound further up: act now (priority bindings already ran in the app)
        if await self.app._check_bindings(event.key):  # noqa: SLF001 - Textual's own dispatch
            event.stop()
            event.prevent_default()
            self._deferring = True
            self.app.call_later(self._undefer)

    def _undefer(self) -> None:
        self._deferring = False

    def _deliver(self, key: str, character: str | None) -> None:
        """A key of the burst, typed again: to the widget that has the focus now."""
        self.app.post_message(events.Key(key, character))
