"""The selector against :class:`SelectorModel` cycle by cycle and against the paper's rule
(:func:`select_message`) message by message; :func:`hole_frames` makes the frames that close
the holes of the model's coverage, each tried on a copy of the model first."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable

from ..coverage import closing_rounds
from ..models.selector import SelectorModel, select_message
from ..scoreboard import Scoreboard

__all__ = [
    "OUTPUTS",
    "CHECKS",
    "stimulus",
    "SelectorMonitor",
    "check_messages",
    "SelectorCheck",
    "hole_frames",
]

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
    :func:`select_message` of what was sent; one checked message per frame of two words or
    more and wire. A one-word frame (a ``start`` right after a ``start``) is cut: its messages
    leave on neither branch, and its cycle pads the frame before it."""
    whole = [(n, words) for n, words in enumerate(frames) if len(words) >= 2]
    # Cycles each whole frame's output lasts beyond its message: the stripped bit's slot and
    # one per cut frame right behind it.
    pads = [1 + _cut_after(frames, n) for n, _ in whole]
    if len(observed) != len(whole):
        scoreboard.fail(
            "message_mismatches", f"{len(observed)} output frames for {len(whole)} input frames"
        )
    for (n, words), pad, out in zip(whole, pads, observed, strict=False):
        for w in range(width):
            bits = [(word >> w) & 1 for word in words]
            want_one, want_zero = select_message(bits)
            # The frame period is unchanged: the stripped bit's slot (and the cycles of cut
            # frames behind it) are idle 0s at the end.
            want = (want_one + [0] * pad, want_zero + [0] * pad)
            got = ([(one >> w) & 1 for one, _ in out], [(zero >> w) & 1 for _, zero in out])
            scoreboard.checked += 1
            where = f"frame {n} wire {w}, sent {bits}"
            scoreboard.compare("message_mismatches", where, got, want, ("one", "zero"))


def _cut_after(frames: list[list[int]], n: int) -> int:
    """One-word frames right after frame ``n``."""
    k = n + 1
    while k < len(frames) and len(frames[k]) == 1:
        k += 1
    return k - n - 1


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


def hole_frames(model: SelectorModel, rng: random.Random, tries: int):
    """Frames that close the holes of ``model.coverage``, one at a time (the caller runs each,
    with :meth:`SelectorCheck.run`, before the next is drawn). A candidate is a frame of 1 to
    4 words whose M and address bits are all 0, all 1 or random, each way with the same
    chance; it is tried on a copy of the model as the check runs it (with its closing frame)
    and kept only if it hits a hole."""
    width = model.width

    def bits(chance: float) -> int:
        return sum((rng.random() < chance) << w for w in range(width))

    def candidate() -> list[int]:
        words = [bits(rng.choice((0.0, 0.5, 1.0))) for _ in range(2)]
        words += [rng.getrandbits(width) for _ in range(2)]
        return words[: rng.randint(1, 4)]

    def reach(frame: list[int]):
        twin = model.clone()
        for start, word in stimulus([frame]):
            twin.step(start, word)
        return twin.coverage

    for _, frame in closing_rounds(model, tries, candidate, reach):
        yield frame
