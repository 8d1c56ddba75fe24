"""One scoreboard for every cocotb bench and model-equivalence test, and the one way to break
the reference on purpose.

A :class:`Scoreboard` keeps named checks (``"cycle_mismatches"``, ``"message_mismatches"``,
``"double_grants"`` ...), each counting its failures, the number of items checked and the first
failure's text; :meth:`Scoreboard.summary` gives the keys every bench summary carries (see
:mod:`fattree.sim.cocotb_runner`). It is pure Python, so the amaranth.sim tests and the cocotb
benches keep score the same way, through the per-design checks of :mod:`fattree.sim.checks`.

Breaking the reference (``fattree sim --mutate-model``, ``bench={"mutation": True}``,
``Scoreboard(..., mutate=True)``) happens in one place, on the expected side of
:meth:`Scoreboard.compare`: the first expected value that has a non-zero number in it loses
the lowest set bit of that number (:func:`break_reference`). It happens once per run, so
exactly one comparison is given a wrong reference; the model, the stimulus and the design
under test are untouched. A run that still passes has a scoreboard that does not check.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["Scoreboard", "break_reference"]


def break_reference(value):
    """``value`` with the lowest set bit of its first non-zero number cleared, or None if it has
    none.

    ``value`` is a number or nested tuples and lists (numbers found depth first, other items
    such as strings skipped); the result is a copy, tuples and lists rebuilt as plain ones.
    """
    if isinstance(value, int):
        return value & (value - 1) if value else None
    if isinstance(value, tuple | list):
        for k, item in enumerate(value):
            broken = break_reference(item)
            if broken is not None:
                copy = list(value)
                copy[k] = broken
                return tuple(copy) if isinstance(value, tuple) else copy
    return None


class Scoreboard:
    """Failure counters of named checks, and what was checked.

    Parameters
    ----------
    checks : sequence of str
        The summary key of each check's failure count, e.g. ``("cycle_mismatches",
        "message_mismatches")``.
    unit : str
        What :attr:`checked` counts ("messages", "results"); the summary also gives the count
        as ``f"{unit}_checked"``.
    mutate : bool
        Break the reference once (see the module's description): the run must then fail.
    """

    def __init__(self, checks: Sequence[str], *, unit: str = "messages", mutate: bool = False):
        if isinstance(checks, str) or not checks:
            raise ValueError(f"checks must be a non-empty sequence of names, not {checks!r}")
        self.unit = unit
        #: Failures of each check, by summary key.
        self.failures = dict.fromkeys(checks, 0)
        #: Items checked, in :attr:`unit`; the caller counts them.
        self.checked = 0
        self.first_mismatch: str | None = None
        self._armed = bool(mutate)

    def compare(self, check: str, where: str, seen, want, names: Sequence[str] | None = None):
        """Compare what the design did (``seen``) with the reference (``want``); a difference
        is a failure of ``check``, reported at ``where``. With ``names`` (one per item of
        ``seen``), the report names the first item that differs. Returns whether they agree.
        """
        if self._armed:
            broken = break_reference(want)
            if broken is not None:
                want, self._armed = broken, False
        if seen == want:
            return True
        if names is None:
            text = f"{where}: {seen}, model says {want}"
        else:
            name, got, exp = next(x for x in zip(names, seen, want, strict=True) if x[1] != x[2])
            text = f"{where}: {name} = {got}, model says {exp}"
        self.fail(check, text)
        return False

    def fail(self, check: str, text: str) -> None:
        """Count one failure of ``check`` (a check with no reference value to compare, such
        as a lost message or a timeout); ``text`` becomes the first mismatch if none was."""
        if check not in self.failures:
            raise ValueError(
                f"check must be one of {', '.join(map(repr, self.failures))}, not {check!r}"
            )
        self.failures[check] += 1
        if self.first_mismatch is None:
            self.first_mismatch = text

    @property
    def mismatches(self) -> int:
        """Failures of every check together."""
        return sum(self.failures.values())

    def summary(self, cycles: int, **details) -> dict:
        """The bench summary: ``cycles``, ``checked``, ``unit``, ``{unit}_checked``, each
        check's failures, ``mismatches``, ``first_mismatch``, then ``details``."""
        return {
            "cycles": cycles,
            "checked": self.checked,
            "unit": self.unit,
            f"{self.unit}_checked": self.checked,
            **self.failures,
            "mismatches": self.mismatches,
            "first_mismatch": self.first_mismatch,
            **details,
        }

    def raise_on_mismatch(self) -> None:
        """Fail the bench or test (``AssertionError``) if any check failed."""
        if self.mismatches:
            raise AssertionError(f"{self.mismatches} mismatches; first: {self.first_mismatch}")
