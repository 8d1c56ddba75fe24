"""Name -> entry tables (designs, FPGA families, boards, self-tests) with one-line lookup errors.

Each table is a read-only mapping built from a list of frozen dataclasses, keyed by one of
their attributes. Looking up a name that is not there raises :class:`UnknownName`, whose
message names the kind of entry and the names that are known, e.g.
``unknown design 'nosuch'; known designs: circuit-router, ...``: the command line prints it as
it is. It is both a ``KeyError`` (so the mapping behaves like a dict: ``in``, ``.get()``) and a
``ValueError`` (what the ``get_*`` helpers raised before, and what the command line catches).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Generic, TypeVar

__all__ = ["Registry", "UnknownName", "resolve"]

T = TypeVar("T")


class UnknownName(KeyError, ValueError):
    """A name a :class:`Registry` does not have; ``str()`` is the one-line message."""

    def __str__(self) -> str:
        # KeyError would quote its message like a key.
        return str(self.args[0])


class Registry(Mapping[str, T], Generic[T]):
    """A read-only ``{name: entry}`` table whose failed lookups say what is known.

    Parameters
    ----------
    kind : str
        What an entry is, for the message: ``"design"``, ``"family"``, ...
    entries : iterable
        The entries, in the order the table keeps (and iterates) them.
    key : str
        Attribute of an entry that is its name; default ``"name"``.
    plural : str
        Plural of ``kind``; default ``kind + "s"``.
    sort_known : bool
        List the known names sorted (default) or in table order.
    message : str
        Format of the error message instead of
        ``"unknown {kind} {name!r}; known {plural}: {known}"``, with the fields ``name`` (the
        name looked up) and ``known`` (the known names, comma-separated).

    Raises
    ------
    ValueError
        If two entries have the same name.
    """

    def __init__(
        self,
        kind: str,
        entries: Iterable[T],
        *,
        key: str = "name",
        plural: str | None = None,
        sort_known: bool = True,
        message: str | None = None,
    ):
        table: dict[str, T] = {}
        for entry in entries:
            name = getattr(entry, key)
            if name in table:
                raise ValueError(f"two {plural or kind + 's'} are named {name!r}")
            table[name] = entry
        self._entries = table
        self.kind = kind
        self._message = message or (
            f"unknown {kind} {{name!r}}; known {plural or kind + 's'}: {{known}}"
        )
        self._sort_known = sort_known

    def __getitem__(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownName(self.unknown(name)) from None

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, [{', '.join(map(repr, self._entries))}])"

    def get_or_raise(self, name: str) -> T:
        """The entry named ``name``; :class:`UnknownName` (a ``ValueError``) if there is none."""
        return self[name]

    def unknown(self, name: str) -> str:
        """The one-line message for a lookup of ``name`` that failed."""
        names = sorted(self._entries) if self._sort_known else list(self._entries)
        return self._message.format(name=name, known=", ".join(names))


def resolve(path: str):
    """The object a table entry names as ``"module:attribute"`` (imported on first use, so a
    table can name Amaranth classes without importing Amaranth itself)."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)
