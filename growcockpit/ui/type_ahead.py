"""Type-ahead across screen changes: keys pressed while a screen opens go to that screen.

A key that opens a screen (Enter on Home, `e` on the dashboard, `l` in the
designer) is followed, at paste or fast-typing speed, by keys meant for the
screen it opens; Textual would hand them to the old screen (the open is a
message still in the queue) or to a screen not yet mounted, where they are lost
or land in whichever widget has focus first (an `l` meant for Launch became a
stage name). The app holds such keys from the moment a screen is asked for
until the new screen is mounted and focused, then replays them to it in order.

Replaying is the type-ahead a shell gives, and safe because every irreversible
action still asks first, with one exception handled here: keys held for a
confirmation dialog are dropped, never replayed (a question must be seen before
it is answered). Held keys are replayed one at a time, each once the app is idle after
the one before (a burst would reach the new focus before a Tab had moved it). A hold
that no screen follows (the open failed) ends after
`HOLD_MAX_S`, and its keys go where they would have gone; a screen that came is
waited for while it mounts (up to `MOUNT_MAX_S` more, however loaded the machine).

Plain Python (no Textual): the app feeds it its key events and asks when to let go.
"""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar, runtime_checkable

HOLD_MAX_S = 1.0
MOUNT_MAX_S = 10.0

K = TypeVar("K")


class TypeAhead(Generic[K]):
    """The keys held while a screen opens, in the order they were pressed."""

    def __init__(self) -> None:
        self.keys: list[K] = []
        self.origin: object | None = None  # the screen that asked; the new one is not it
        self._until: float | None = None

    @property
    def holding(self) -> bool:
        return self._until is not None

    def hold(self, origin: object | None, now: float) -> None:
        """Hold keys from now until a screen other than `origin` is ready (or HOLD_MAX_S).

        A hold without an origin (a screen changed, or keys came faster than they were
        handled) takes the origin of a screen that asks later, so its keys wait for the
        screen it is opening too."""
        if self._until is None or self.origin is None:
            self.origin = origin
        self._until = now + HOLD_MAX_S

    def offer(self, key: K) -> bool:
        """Keep `key` when holding (True); False: handle it now."""
        if self._until is None:
            return False
        self.keys.append(key)
        return True

    def ready(self, top: object, top_mounted: bool, now: float) -> bool:
        """Time to let go: the screen on top is new and mounted, or the hold ran out (no new
        screen within HOLD_MAX_S; one that came but still mounts, a loaded machine's slow
        compose, is waited for up to MOUNT_MAX_S more)."""
        if self._until is None:
            return False
        if top is not self.origin:
            return top_mounted or now >= self._until + MOUNT_MAX_S
        return now >= self._until

    def take(self) -> K | None:
        """The next key to replay, one at a time; None (and the hold ends) when none is left.

        Replaying one key per turn, each once the app has handled the one before, keeps a
        Tab's focus move ahead of the characters typed after it; keys pressed meanwhile
        join the queue behind the held ones instead of overtaking them."""
        if self.keys:
            return self.keys.pop(0)
        self.release()
        return None

    def release(self) -> list[K]:
        """Stop holding; the keys to replay, in order."""
        keys, self.keys = self.keys, []
        self._until, self.origin = None, None
        return keys


@runtime_checkable
class KeyHolder(Protocol):
    def hold_keys(self) -> None: ...


def hold_keys(app: object) -> None:
    """Ask the app (when it keeps type-ahead) to hold keys: a screen is about to open."""
    if isinstance(app, KeyHolder):
        app.hold_keys()
