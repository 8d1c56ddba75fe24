"""The selector against :class:`SelectorModel` cycle by cycle and against the paper's rule
(:func:`select_message`) message by message."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ..models.selector import SelectorModel, select_message
from ..scoreboard import Scoreboard

__all__ = ["OUTPUTS", "CHECKS", "stimulus", "SelectorMonitor", "check_messages", "SelectorCheck"]

OUTPUTS = ("start_o", "one", "zero")
CHECKS = ("cycle_mismatches", "message_mismatches")


def stimulus(frames: list[list[int]]) -> list[tuple[int, int]]:
    """``(start, i)`` per cycle: ``start`` on each frame's first word, then a closing frame of
    zeros (five cycles) that ends the last real frame's messages."""
    cycles = [(int(k == 0), word) for frame in frames for k, word in enumerate(frame)]
    return cycles + [(1, 0)] + [(0, 0)] * 4


class SelectorMonitor:
    """Reassembles each wire's branch messages from ``start_o`` to the next ``start_o``."""

    def __init__(self):
        self.frames: list[list[tuple[int, int]]] = []  # completed frames: (one, zero) words
        self._current: list[tuple[int, int]] | None = None

    def sample(self, outputs: tuple[int, int, int]) -> None:
        start_o, one, zero = outputs
        if start_o:
            if self._current is not None:
                self.frames.append(self._current)
            self._current = []
        if self._current is not None:
            self._current.append((one, zero))


def check_messages(
    scoreboard: Scoreboard, width: int, frames: list[list[int]], observed: list[list[tuple]]
) -> None:
    """Frame by frame, wire by wire: the branch messages the monitor saw (``observed``) against
    :func:`select_message` of what was sent; one checked message per frame and wire."""
    if len(observed) != len(frames):
        scoreboard.fail(
            "message_mismatches", f"{len(observed)} output frames for {len(frames)} input frames"
        )
    for n, (words, out) in enumerate(zip(frames, observed, strict=False)):
        for w in range(width):
            bits = [(word >> w) & 1 for word in words]
            want_one, want_zero = select_message(bits)
            # The frame period is unchanged: the stripped bit's slot is an idle 0 at the end.
            want = (want_one + [0], want_zero + [0])
            got = ([(one >> w) & 1 for one, _ in out], [(zero >> w) & 1 for _, zero in out])
            scoreboard.checked += 1
            where = f"frame {n} wire {w}, sent {bits}"
            scoreboard.compare("message_mismatches", where, got, want, ("one", "zero"))


class SelectorCheck:
    """Drives frames into a selector of ``width`` wires and checks its outputs every cycle
    against :class:`SelectorModel`, and (``messages=True``) every branch message against the
    paper's rule.

    ``read()`` gives ``(start_o, one, zero)``, ``drive(start, i)`` sets the inputs, ``tick()``
    waits one cycle.
    """

    def __init__(
        self,
        width: int,
        scoreboard: Scoreboard,
        read: Callable[[], tuple[int, int, int]],
        drive: Callable[[int, int], None],
        tick: Callable[[], Awaitable],
    ):
        self.width = width
        self.scoreboard = scoreboard
        self.read, self.drive, self.tick = read, drive, tick
        self.model = SelectorModel(width)
        self.monitor = SelectorMonitor()  # of the current run
        self.cycle = 0

    async def run(self, frames: list[list[int]], *, messages: bool = True) -> None:
        """Drive ``frames`` (word lists, back to back, then the closing frame). The message
        check needs every frame to hold an M bit and an address bit (two words or more)."""
        self.monitor = SelectorMonitor()
        for start, word in stimulus(frames):
            seen = tuple(self.read())
            self.drive(start, word)
            want = self.model.step(start, word)
            expected = (want.start_o, want.one, want.zero)
            self.scoreboard.compare(
                "cycle_mismatches", f"cycle {self.cycle}", seen, expected, OUTPUTS
            )
            self.monitor.sample(seen)
            self.cycle += 1
            await self.tick()
        if messages:
            check_messages(self.scoreboard, self.width, frames, self.monitor.frames)
