"""A whole Leiserson fat-tree delivering an off-line schedule, against the tree model.

Each delivery cycle of a schedule gets switch settings (a random maximum matching at every
concentrator stage, so that every switch position is used) and headers, random data, and
senders staggered by up to 2 cycles (:func:`fattree.sim.models.leiserson_tree.
delivery_waves`). The check drives the cycles one after another, bit-serially, and checks:

* cycle by cycle, every leaf's receive wires and the root's output (``root_o``) against the
  tree model;
* message by message, that each message arrives at its destination with its data, and (for a
  whole schedule) that every message arrives exactly once, except those sent with an edge
  index a switch lacks (``drop``): those must vanish at that switch.

Messages may also enter or leave through the root's external channel (an end of
:data:`~fattree.sim.models.leiserson_tree.OUTSIDE`): they are driven on ``root_i`` through
``drive_root`` and expected on ``root_o``.

A tree built with ``start_lead = d`` takes ``start`` d cycles before its delivery cycle. The
check then raises ``start`` as the model's timing says and holds everything else (send and
root words, expected outputs) d cycles back: the tree must show the model's outputs d cycles
after the model does. The first d cycles expect a quiet tree (after reset, before any delivery
cycle), and :meth:`LeisersonTreeCheck.flush` drives the last d held cycles.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable

from ...params import check_int_range
from ...spec.capacities import TreeLayout
from ..models.leiserson_tree import OUTSIDE, LeisersonTreeModel
from ..scoreboard import Scoreboard

__all__ = ["DATA_BITS", "CHECKS", "LeisersonTreeCheck"]

DATA_BITS = 8
CHECKS = ("cycle_mismatches", "message_mismatches")


def data_bits(data: int) -> tuple[int, ...]:
    """A message as it arrives: its M bit, then the data bits, most significant first."""
    return tuple([1] + [(data >> (DATA_BITS - 1 - b)) & 1 for b in range(DATA_BITS)])


class LeisersonTreeCheck:
    """Delivers schedules through a Leiserson fat-tree of ``layout`` and checks it.

    ``read()`` gives ``(recv words per leaf, root_o)``, ``drive(start, send words per leaf)``
    sets the inputs, ``tick()`` waits one cycle, ``drive_root(word)`` (needed only for
    messages from :data:`OUTSIDE`) sets ``root_i``. :attr:`delivery_cycles` counts the
    delivery cycles driven. ``start_lead`` is the tree's (``start`` that many cycles early);
    with it, call :meth:`flush` after the last :meth:`deliver`.
    """

    def __init__(
        self,
        layout: TreeLayout,
        scoreboard: Scoreboard,
        read: Callable[[], tuple[list[int], int]],
        drive: Callable[[int, list[int]], None],
        tick: Callable[[], Awaitable],
        drive_root: Callable[[int], None] | None = None,
        *,
        start_lead: int = 0,
    ):
        self.layout = layout
        #: The tree model (:meth:`LeisersonTreeModel.start_coverage` counts the cover points).
        self.model = LeisersonTreeModel(layout)
        self.start_lead = check_int_range("start_lead", start_lead, 0)
        # Cycles driven with `start` but not yet with their words: (send row, root word,
        # expected outputs, where). Before the first delivery cycle the tree is quiet.
        quiet = ([0] * layout.leaves, 0, ([0] * layout.leaves, 0))
        self._held = deque(
            (*quiet, f"before the first delivery cycle, cycle {t}") for t in range(start_lead)
        )
        self.scoreboard = scoreboard
        self.read, self.drive, self.tick = read, drive, tick
        self.drive_root = drive_root
        self.delivery_cycles = 0
        #: Messages sent with a header a switch must drop, and not delivered.
        self.dropped = 0

    async def deliver(
        self, messages, schedule, rng, label: str, *, complete: bool = True, wires=None, drop=()
    ):
        """Drive every delivery cycle of ``schedule`` (cycles of indices into ``messages``,
        ``(src, dst)`` pairs, an end may be :data:`OUTSIDE`), data and stagger drawn from
        ``rng``; ``complete`` says the schedule holds every message; ``wires`` optionally
        gives each message's wire at its source; ``drop``, messages to send with a header that
        a switch must drop (where their path allows one: the others are sent whole). Returns
        the indices of the messages that arrived."""
        sb = self.scoreboard
        if self.drive_root is None and any(src == OUTSIDE for src, _ in messages):
            raise ValueError("messages from OUTSIDE need a drive_root callable")
        waves = self.model.delivery_waves(
            messages,
            schedule,
            rng,
            DATA_BITS,
            wires=wires,
            random_switches=True,
            drop=set(drop),
        )
        arrived, dropped = [], [m for wave in waves for m in wave.dropped]
        for number, wave in enumerate(waves):
            where = f"{label} set, delivery cycle {number}, cycle"
            for t, row in enumerate(wave.drive):
                want = (wave.expect[t], wave.root_expect[t])
                self._held.append((row, wave.root_drive[t], want, f"{where} {t}"))
                await self._cycle(int(t == 0))
            for a in wave.delivery.arrivals:
                index, data = wave.sent[(a.src, a.src_wire)]
                sb.checked += 1
                dst = messages[index][1]
                want = (("root", 0) if dst == OUTSIDE else ("leaf", dst), data_bits(data))
                seen = (a.where, a.bits)
                sb.compare(
                    "message_mismatches",
                    f"message {messages[index]}",
                    seen,
                    want,
                    ("arrived at", "bits"),
                )
                arrived.append(index)
            self.delivery_cycles += 1
        if complete and sorted(arrived + dropped) != list(range(len(messages))):
            sb.fail("message_mismatches", f"{label} set: not every message arrived exactly once")
        self.dropped += len(dropped)
        return arrived

    async def _cycle(self, start: int):
        """One clock cycle: ``start`` now, the words and expectation held longest."""
        row, root_word, want, where = self._held.popleft()
        seen = tuple(self.read())
        self.drive(start, row)
        if self.drive_root is not None:
            self.drive_root(root_word)
        self.scoreboard.compare("cycle_mismatches", where, seen, want, ("recv", "root_o"))
        await self.tick()

    async def flush(self):
        """Drive and check the ``start_lead`` cycles still held (nothing for a lead of 0)."""
        while self._held:
            await self._cycle(0)
