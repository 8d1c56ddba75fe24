"""Functional coverage of the level-wise scheduler (docs/scheduler.md, "Coverage"): the cover
points of Ding's Fig. 7 and of its pipeline, counted by :class:`SchedulerCounter` as the
reference model (:class:`~fattree.sim.models.scheduler.SchedulerModel`, level-wise, ``keep``)
decides each command.

The pipeline situations need the cycle each command was taken (``at``): the level-wise
scheduler is pipelined with one command per clock (``STAGES_PER_LEVEL`` stages per link
level), so a command reads a link row that one of the commands just ahead of it is still
writing, and must see that write (read after write through the pipeline); a CLEAR offered
right behind commands must wait until they are out. Commands given without ``at`` count
everything else.
"""

from __future__ import annotations

from ...spec.scheduler import STAGES_PER_LEVEL, GeneralizedFatTree, pipeline_latency
from ..coverage import Coverage, CoverPoint

__all__ = ["cover_points", "SchedulerCounter"]

#: Why a request found no port at a level: the Ulink row, the Dlink row, or both all taken,
#: or each with a free port but none free in both (the AND of Fig. 7, line 3).
REFUSALS = ("refused: up full", "refused: down full", "refused: both full", "refused: no common")

KINDS = ("schedule", "release")


def _distances() -> tuple[str, ...]:
    return (*(str(k) for k in range(1, STAGES_PER_LEVEL + 1)), "memory", "cleared")


def cover_points(tree: GeneralizedFatTree) -> list[CoverPoint]:
    """Per link level ``h`` and for the whole scheduler, the bins this tree can reach
    (:func:`_reachable`)."""
    points = []
    for h in range(tree.levels - 1):
        refusals, ports, full = _reachable(tree, h)
        points += [
            CoverPoint(
                f"level/L{h}",
                ("port found", *refusals),
                f"a request at level {h}: a port free in both its Ulink and its Dlink row, or "
                "refused there for want of one (the AND of the two vectors, Fig. 7)",
            ),
            CoverPoint(
                f"port/L{h}",
                tuple(f"P{i}" for i in range(ports)),
                f"the port the priority select takes at level {h}: the lowest free in both",
            ),
        ]
        if full:
            points.append(
                CoverPoint(
                    f"full/L{h}",
                    ("Ulink", "Dlink"),
                    f"a grant that takes the last free port of a row at level {h}: the "
                    "channel between two switches at its capacity",
                )
            )
        points.append(
            CoverPoint(
                f"raw/L{h}",
                _distances(),
                f"a command reading a row of level {h} that a command taken k cycles before "
                f"wrote: 1 .. {STAGES_PER_LEVEL} while that one is still in the level's "
                "stages (its write must be forwarded), further back through the memory, or "
                "written before a CLEAR (the CLEAR's write is the one to see)",
            )
        )
    return points + [
        CoverPoint(
            "forward",
            tuple(f"{b} after {a}" for b in KINDS for a in KINDS),
            "a read after a write still in the pipeline, by what wrote the row and what reads "
            "it: a grant takes bits, a RELEASE gives them back",
        ),
        CoverPoint(
            "granted",
            tuple(f"H{k}" for k in range(tree.levels)),
            "granted requests per common level H (H 0: inside one leaf switch, no link)",
        ),
        CoverPoint(
            "release",
            tuple(f"H{k}" for k in range(1, tree.levels)),
            "connections released per common level: every level's links given back",
        ),
        CoverPoint(
            "clear",
            ("pipeline empty", "behind commands"),
            "a CLEAR offered with no command in the pipeline, or right behind commands still "
            "in it (it must wait until they are out)",
        ),
    ]


def _reachable(tree: GeneralizedFatTree, h: int) -> tuple[tuple[str, ...], int, bool]:
    """At link level ``h``: the refusals, how many ports the priority select can take, and
    whether a grant can fill a row.

    Above level 0 a request reaches its switch ``s_h`` over one of the ``m`` links below it,
    free until it took it, and every connection holding one of the switch's ``w`` up links
    holds one of those ``m`` too (in ``keep`` mode as well: a refused request holds links
    only below its refusal); so at most ``m - 1`` of the row are taken, and the same holds
    for the Dlink row on the way down. A row is then never full in a request's way unless
    ``w < m``, only ``w <= m`` lets a grant take its last port, and the lowest port free in
    both is at most ``2 m - 2``. At the top link level of a tree with ``m = 2`` the rows pair
    up: every request through ``Ulink(h, s)`` comes down through the one ``Dlink`` of the
    other half with the same ports, so the two rows are always equal (no refusal with a free
    port on one side, and the lowest free port at most ``m - 1``)."""
    paired = h == tree.levels - 2 and tree.m == 2
    if h == 0:
        full_rows, ports, fills = True, tree.w, True
    else:
        full_rows, fills = tree.w < tree.m, tree.w <= tree.m
        ports = min(tree.w, tree.m if paired else 2 * tree.m - 1)
    refusals = ()
    if full_rows:
        refusals = REFUSALS[2:3] if paired else REFUSALS[:3]
    if not paired:
        refusals += REFUSALS[3:]
    return refusals, ports, fills


class SchedulerCounter:
    """Counts :func:`cover_points` of ``tree`` into :attr:`coverage` as the model tells it
    what each command read, decided and wrote."""

    def __init__(self, tree: GeneralizedFatTree):
        self.coverage = Coverage(cover_points(tree))
        self.latency = pipeline_latency(tree.levels)
        #: Per row ``(direction, level, switch)``: the last write, ``(at, kind, clears)``.
        self.writes: dict[tuple, tuple] = {}
        self.clears = 0  # CLEARs so far: writes before the last one are gone
        self.last_at: int | None = None  # when the last SCHEDULE or RELEASE was taken

    def access(self, kind: str, rows, at: int | None, *, write: bool) -> None:
        """A command of ``kind`` taken at ``at`` reads ``rows`` (and writes them back)."""
        cover = self.coverage
        for row in rows:
            last = self.writes.get(row)
            if at is not None and last is not None:
                when, writer, clears = last
                if clears < self.clears:
                    distance = "cleared"
                elif at - when <= STAGES_PER_LEVEL:
                    distance = str(at - when)
                    cover.hit("forward", f"{kind} after {writer}")
                else:
                    distance = "memory"
                cover.hit(f"raw/L{row[1]}", distance)
            if write and at is not None:
                self.writes[row] = (at, kind, self.clears)

    def level(self, h: int, s: int, d: int, up: int, down: int, port: int | None, at) -> None:
        """A SCHEDULE at level ``h``: rows ``up`` of ``Ulink(h, s)``, ``down`` of
        ``Dlink(h, d)``, and the port taken (None: refused here)."""
        self.access("schedule", (("up", h, s), ("down", h, d)), at, write=port is not None)
        cover = self.coverage
        if port is None:
            cause = (not up) + 2 * (not down)
            cover.hit(f"level/L{h}", REFUSALS[cause - 1 if cause else 3])
            return
        cover.hit(f"level/L{h}", "port found")
        cover.hit(f"port/L{h}", f"P{port}")
        if not up & ~(1 << port):
            cover.hit(f"full/L{h}", "Ulink")
        if not down & ~(1 << port):
            cover.hit(f"full/L{h}", "Dlink")

    def command(self, kind: str, height: int, granted: bool, at) -> None:
        """A SCHEDULE or RELEASE done."""
        if granted:
            self.coverage.hit("granted" if kind == "schedule" else "release", f"H{height}")
        if at is not None:
            self.last_at = at

    def clear(self, at) -> None:
        if at is not None:
            behind = self.last_at is not None and at - self.last_at < self.latency
            self.coverage.hit("clear", "behind commands" if behind else "pipeline empty")
        self.clears += 1
