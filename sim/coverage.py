"""Functional coverage: which situations of a design a run created.

A design's reference model declares its cover points (:class:`CoverPoint`: a name, the bins,
and why the situation matters, from the paper and the design's rules) and, when given a
:class:`Coverage` as its ``cover`` attribute, counts a hit in a bin each time it decides the
situation. The model decides what the hardware must do in every cycle and the check compares
the two in every cycle, so a situation the model met is one the hardware met with the same
outcome. ``fattree sim DESIGN --coverage`` reports the hits per bin and the holes (bins never
hit).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["CoverPoint", "Coverage", "coverage_table", "closing_rounds"]


@dataclass(frozen=True)
class CoverPoint:
    #: ``"group/instance"``, e.g. ``"claims/L1"`` (level 1's routers).
    name: str
    bins: tuple[str, ...]
    #: Why the situation matters (the docs' table lists it).
    why: str


class Coverage:
    """Hits per bin of each point; a hit in an undeclared point or bin is an error (a model
    that emits it is out of step with its declaration)."""

    def __init__(self, points: Iterable[CoverPoint]):
        self.points = {p.name: p for p in points}
        self.hits = {name: dict.fromkeys(p.bins, 0) for name, p in self.points.items()}

    def hit(self, name: str, bin: str) -> None:
        try:
            self.hits[name][bin] += 1
        except KeyError:
            raise KeyError(f"no cover bin {name}:{bin}") from None

    def holes(self) -> list[str]:
        """``"point:bin"`` of every bin never hit, in declaration order."""
        return [f"{name}:{b}" for name, bins in self.hits.items() for b, n in bins.items() if not n]

    def as_dict(self) -> dict:
        total = sum(len(bins) for bins in self.hits.values())
        return {
            "points": {
                name: {"why": self.points[name].why, "bins": dict(bins)}
                for name, bins in self.hits.items()
            },
            "bins": total,
            "hit": total - len(self.holes()),
            "holes": self.holes(),
        }


def coverage_table(report: dict) -> str:
    """A report of :meth:`Coverage.as_dict` as text: one line per point, its bins' hits."""
    width = max(map(len, report["points"]), default=0)
    lines = [f"coverage: {report['hit']} of {report['bins']} bins hit"]
    for name, point in report["points"].items():
        bins = ", ".join(f"{b} {n}" if n else f"{b} HOLE" for b, n in point["bins"].items())
        lines.append(f"  {name:{width}}  {bins}")
    return "\n".join(lines)


def closing_rounds(model, tries: int, candidate, reach):
    """Rounds of traffic that close holes of ``model.coverage``: ``candidate()`` draws one,
    ``reach(round)`` is the coverage it would reach (run on a clone of the model); yields
    ``(k, round)`` for each candidate that hits a hole, the ``k``-th drawn, until no hole is
    left or ``tries`` were drawn. Lazily: the caller runs each round on the design (and so
    on ``model``) before the next is drawn."""
    for k in range(tries):
        holes = set(model.coverage.holes())
        if not holes:
            return
        drawn = candidate()
        if holes - set(reach(drawn).holes()):
            yield k, drawn
