"""Parameter validation shared by the HDL, the models and the command line.

Messages name the parameter and the bad value, e.g. ``width must be a positive integer,
not 0``; tests pin them.

A design states its parameters once, as a :class:`Contract` of :class:`Param` s in its
definitions module (``fattree/spec/<design>.py``): the design table (fattree/designs.py)
offers them on the command line, and the component (``hdl/``) and the model
(``sim/models/``) check a Python value through the same entry.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "check_positive_int",
    "check_int_range",
    "check_power_of_two",
    "UNBOUNDED",
    "Param",
    "Contract",
    "MAX_LIST",
    "parse_int_list",
]


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_positive_int(name: str, value) -> int:
    if not _is_int(value):
        raise TypeError(f"{name} must be a positive integer, not {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, not {value!r}")
    return value


def check_int_range(name: str, value, lo: int, hi: int | None = None) -> int:
    """An integer in ``lo .. hi`` (inclusive; ``hi=None`` for no upper bound)."""
    if not _is_int(value):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if value < lo or (hi is not None and value > hi):
        bound = f"at least {lo}" if hi is None else f"between {lo} and {hi}"
        raise ValueError(f"{name} must be {bound}, not {value!r}")
    return value


def check_power_of_two(name: str, value, minimum: int = 1) -> int:
    if not _is_int(value):
        raise TypeError(f"{name} must be a power of two, not {value!r}")
    if value < minimum or value & (value - 1):
        raise ValueError(f"{name} must be a power of two of at least {minimum}, not {value!r}")
    return value


#: ``limit`` (or ``model_limit``) of a parameter the code takes at any size from ``lo`` up.
UNBOUNDED = math.inf


@dataclass(frozen=True)
class Param:
    """A design parameter: an integer in ``lo .. hi`` (a power of two with ``power_of_two``),
    or with ``choices`` one of those names, or with ``text`` whatever that function makes of
    the text (its canonical form).

    ``lo .. hi`` is the range the command line offers (``fattree designs`` shows it). Where
    ``hi`` is only a practical bound of the command line (build time, memory, run time), not
    the design's, ``limit`` is the largest value the component takes (:data:`UNBOUNDED`:
    any); where the model runs further than the hardware is built (experiments at large
    sizes), ``model_limit`` is the model's.
    """

    name: str
    default: int | str
    help: str
    lo: int = 1
    hi: int | None = None
    choices: tuple[str, ...] = ()
    text: Callable[[str], int | str] | None = None
    #: An integer parameter that must be a power of two (of at least ``lo``).
    power_of_two: bool = False
    #: The component's upper bound where it is above ``hi``; None: ``hi``.
    limit: float | None = None
    #: The model's upper bound where it is above the component's; None: the component's.
    model_limit: float | None = None
    #: The check of a Python value where it is not the range or choices above (a retry by
    #: name or code, a size from a short list); it returns the value in canonical form.
    value: Callable[[object], object] | None = None
    #: Other spellings of ``choices`` the command line takes, ``(alias, choice)`` pairs (a
    #: retry strategy's code); the parsed value is the choice.
    aliases: tuple[tuple[str, str], ...] = ()

    def parse(self, text: str) -> int | str:
        """The value of the command line's text (``--param name=text``), in ``lo .. hi``."""
        if self.text is not None:
            try:
                return self.text(text)
            except ValueError as exc:
                raise ValueError(f"parameter {self.name}: {exc}") from None
        if self.choices:
            text = dict(self.aliases).get(text, text)
            if text not in self.choices:
                known = ", ".join(self.choices)
                if self.aliases:
                    known += " (or " + ", ".join(alias for alias, _ in self.aliases) + ")"
                raise ValueError(f"parameter {self.name} must be one of {known}, not {text!r}")
            return text
        try:
            value = int(text, 0)
        except ValueError:
            raise ValueError(f"parameter {self.name} must be an integer, not {text!r}") from None
        if value < self.lo or (self.hi is not None and value > self.hi):
            bound = f"at least {self.lo}" if self.hi is None else f"{self.lo}..{self.hi}"
            raise ValueError(f"parameter {self.name} must be {bound}, not {value}")
        return value

    def upper(self, model: bool = False) -> int | None:
        """The largest value the component (or with ``model`` the model) takes; None: any."""
        bound = self.limit if self.limit is not None else self.hi
        if model and self.model_limit is not None:
            bound = self.model_limit
        return None if bound is None or bound == UNBOUNDED else int(bound)

    def check(self, value, *, model: bool = False):
        """``value`` as a component (or with ``model`` a model) takes it, in canonical form;
        ``TypeError``/``ValueError`` naming the parameter otherwise."""
        if self.value is not None:
            return self.value(value)
        if self.choices:
            if not isinstance(value, str):
                raise TypeError(f"{self.name} must be a string, not {value!r}")
            if value not in self.choices:
                known = ", ".join(map(repr, self.choices[:-1])) + f" or {self.choices[-1]!r}"
                raise ValueError(f"{self.name} must be {known}, not {value!r}")
            return value
        if self.text is not None:
            raise TypeError(f"parameter {self.name} is checked where it is used, not here")
        hi = self.upper(model)
        if self.power_of_two:
            check_power_of_two(self.name, value, self.lo)
            if hi is not None and value > hi:
                raise ValueError(f"{self.name} must be at most {hi}, not {value!r}")
            return value
        if self.lo == 1 and hi is None:
            return check_positive_int(self.name, value)
        return check_int_range(self.name, value, self.lo, hi)


@dataclass(frozen=True)
class Contract:
    """The parameters of one design, stated once (in its definitions module): the design
    table offers them, the component and the model check their values with :meth:`check`."""

    design: str
    params: tuple[Param, ...]

    def __getitem__(self, name: str) -> Param:
        for param in self.params:
            if param.name == name:
                return param
        raise KeyError(f"design {self.design} has no parameter {name!r}")

    def check(self, name: str, value, *, model: bool = False):
        """``value`` of the parameter ``name`` checked (:meth:`Param.check`)."""
        return self[name].check(value, model=model)


#: Values one list of :func:`parse_int_list` may hold (``1..10**12`` would fill memory).
MAX_LIST = 4096

_LIST_ITEM = re.compile(r"^(\d+)(?:(?:\.\.|-)(\d+))?$")


def parse_int_list(text: str, lo: int = 0) -> list[int]:
    """The command line's one range syntax: ``"4..12"`` (inclusive), ``"4,8,20"`` or a mix,
    ``"1..3,7"`` -> ``[1, 2, 3, 7]``, integers of at least ``lo`` in the order given, each
    once. ``A-B`` is taken for ``A..B``. ``ValueError`` in one line otherwise."""
    values: list[int] = []
    for part in text.split(","):
        match = _LIST_ITEM.match(part.strip())
        if not match:
            raise ValueError(f"expected N, A..B or a comma list of them, not {text!r}")
        first, last = int(match[1]), int(match[2] or match[1])
        if last < first:
            raise ValueError(f"range {part.strip()!r} runs backwards")
        if len(values) + last - first >= MAX_LIST:
            raise ValueError(f"expected at most {MAX_LIST} values, not {text!r}")
        values += range(first, last + 1)
    if min(values) < lo:
        least = "positive integers" if lo == 1 else f"integers of at least {lo}"
        raise ValueError(f"expected {least}, not {text!r}")
    return list(dict.fromkeys(values))
