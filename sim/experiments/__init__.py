"""Experiments that reproduce (and extend) the papers' tables and figures.

Each module in this package defines ``EXPERIMENTS``, a list of :class:`Experiment`; the
registry below discovers them, so adding an experiment touches no shared file. The command
line is ``fattree experiment NAME [options] [--json] [--plot FILE]``.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field

from ...params import parse_int_list
from ...registry import Registry

__all__ = [
    "Experiment",
    "Result",
    "registry",
    "counted",
    "int_list",
    "lg_sizes",
    "positive_int",
    "save_plot",
]


@dataclass
class Result:
    """A table, plus anything else worth keeping; ``--json`` prints ``as_dict()``."""

    name: str
    params: dict
    columns: list[str]
    rows: list[list]
    notes: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "experiment": self.name,
            "params": self.params,
            "columns": self.columns,
            "rows": self.rows,
            "notes": self.notes,
            **self.extra,
        }

    def table(self) -> str:
        cells = [[_fmt(c) for c in row] for row in self.rows]
        widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(self.columns)]
        lines = ["  ".join(h.rjust(w) for h, w in zip(self.columns, widths, strict=True))]
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
        return "\n".join(lines + [f"note: {n}" for n in self.notes])


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


@dataclass(frozen=True)
class Experiment:
    name: str
    summary: str
    #: Adds the experiment's own options to its argparse sub-parser.
    add_arguments: Callable[[argparse.ArgumentParser], None]
    #: ``run(args, progress) -> Result``; ``progress(str)`` reports on long runs.
    run: Callable[..., Result]
    #: ``plot(result, path)`` writes a PNG/SVG (matplotlib, Agg backend); None if no plot.
    plot: Callable[[Result, str], None] | None = None


def registry() -> Registry[Experiment]:
    """Every module's ``EXPERIMENTS``, by name (sorted); two with one name are an error."""
    found = [
        experiment
        for info in pkgutil.iter_modules(__path__)
        for experiment in getattr(
            importlib.import_module(f"{__name__}.{info.name}"), "EXPERIMENTS", []
        )
    ]
    return Registry("experiment", sorted(found, key=lambda e: e.name))


def counted(progress, items):
    """Iterate ``items``, telling the progress display how many there are and when each is
    done (a bar with an ETA on a terminal); a plain ``progress(text)`` callback is left alone."""
    items = list(items)
    total = getattr(progress, "total", None)
    advance = getattr(progress, "advance", None)
    if total is not None:
        total(len(items))
    for item in items:
        yield item
        if advance is not None:
            advance()


def save_plot(fig, path: str) -> None:
    """Lay out a matplotlib figure, write it to ``path`` (PNG or SVG by the suffix), close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# -- option types shared by the experiments' argparse parsers ----------------------------------


def int_list(text: str) -> list[int]:
    """``"4..12"`` (inclusive), ``"4,8,20"`` or a mix -> a non-empty list of positive
    integers (:func:`fattree.params.parse_int_list`, the command line's one range syntax)."""
    try:
        return parse_int_list(text, lo=1)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def lg_sizes(lo: int, hi: int) -> Callable[[str], list[int]]:
    """An argparse type for lg n values in ``lo .. hi``, written as :func:`int_list` takes."""

    def parse(text: str) -> list[int]:
        try:
            values = int_list(text)
        except argparse.ArgumentTypeError:
            values = []
        if not values or any(not lo <= v <= hi for v in values):
            raise argparse.ArgumentTypeError(
                f"sizes must be lg n values in {lo}..{hi}, not {text!r}"
            )
        return values

    return parse


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}")
    return value
