"""The FT(l, w) fat-tree of Ding et al. (SC'06, sections 2-3), as plain data and formulas.

Pure Python, no Amaranth: the reference models, the experiments and the hardware generators
all read this one module, so a wiring mistake cannot hide in only one of them.

Structure (section 3, after Ohring)
-----------------------------------
``FT(l, w)`` has ``l`` levels of switches, ``h = 0 .. l-1``, and ``w**(l-1)`` switches per
level, named ``SW(h, t)``. Every switch has ``w`` down ports and ``w`` up ports. ``FT(1, w)``
is one switch; ``FT(l+1, w)`` is ``w`` copies of ``FT(l, w)`` (copy ``c`` numbers its switches
``c * w**(l-1) + t``) plus ``w**l`` new top switches, and the old top switch ``SW(l-1, t)``
connects through its up port ``j`` to the new ``SW(l, (t * w) mod w**l + j)``.

Unrolled, that rule is Theorem 1: up port ``P`` of ``SW(h, t)`` leads to::

    SW(h+1, (t div w**(h+1)) * w**(h+1) + ((t mod w**(h+1)) * w + P) mod w**(h+1))

that is, in base-w digits ``t = t_{l-2} .. t_0``: keep the digits above ``h``, shift the low
``h+1`` digits up by one (dropping digit ``h``) and put ``P`` in digit 0. The switches of
level ``h`` that share the digits ``>= h`` form one "router node" of ``w**h`` switches that
serves the ``w**(h+1)`` nodes below it (with ``w = 2`` this is Strumpen and Krishnamurthy's
butterfly fat tree: the router node at level ``h`` is ``2**h`` routers).

Naming choices the paper leaves open (documented in docs/scheduler.md):

* **Nodes** (processing elements) are numbered ``0 .. w**l - 1``; node ``n`` hangs on down
  port ``n mod w`` of the leaf switch ``SW(0, n div w)`` (the paper's "node 3 to node 95 is
  switch (0,000) to switch (0,113)" in FT(4, 4)).
* **Down ports** of an upper switch are numbered by the digit the child differs in: the
  child ``SW(h, t)`` hangs on down port ``(t div w**h) mod w`` of its parent, i.e. children
  in increasing index order on ports ``0 .. w-1``.
* **Links** are named like the paper names them, by the *lower* switch and its up port:
  ``Ulink(h, t, i)`` is the upward direction of the link on up port ``i`` of ``SW(h, t)``,
  ``Dlink(h, t, i)`` the downward direction of the same cable. Levels ``0 .. l-2`` have up
  links; the top level's up ports are unused (the full tree needs no more). The node cables
  are ``inject`` (node to leaf switch) and ``eject`` (leaf switch to node).

Routes (Theorem 2)
------------------
A request from node ``src`` to node ``dst`` climbs to the lowest common level ``H`` (one more
than the highest base-w digit in which the leaf switches differ; 0 when they are the same
switch) choosing up ports ``P_0 .. P_{H-1}``, and comes down through the *same* port numbers
in the mirrored switches: ``Ulink(h, s_h, P_h)`` up and ``Dlink(h, d_h, P_h)`` down, with
``s_h = (s_0 div w**h) * w**h + sum(P_i * w**(h-1-i))`` (eq. 9) and likewise ``d_h``.

FT(l, m, w) (section 2: ``m`` children and ``w`` parents per switch)
--------------------------------------------------------------------
The paper proves its theorems for FT(l, w) = FT(l, w, w) and says the level-wise algorithm
"is also applicable when m and w are not equal", without giving the construction.
:class:`GeneralizedFatTree` is section 3's recursive rule with ``m`` copies (Ohring's
generalized fat tree, the paper's reference [16]): FT(1, m, w) is one switch with ``m`` nodes;
FT(k+1, m, w) is ``m`` copies of FT(k, m, w) plus ``w**k`` new top switches, and up port ``j``
of the old top switch ``SW(k-1, c * w**(k-1) + t)`` (copy ``c``) goes to the new
``SW(k, t * w + j)``, on its down port ``c``. Level ``h`` then has ``m**(l-1-h) * w**h``
switches, each with ``m`` down and ``w`` up ports, ``m**l`` nodes in all. A switch index of
level ``h`` is a mixed-radix number: the ``l-1-h`` digits of the leaf switch above ``h`` in
base ``m``, then ``h`` base-``w`` digits, the up ports ``P_0 .. P_{h-1}`` that led there
(``P_{h-1}`` lowest): Fig. 7's ``s_{h+1} = s_{l-2} .. s_{h+1} P_0 .. P_h``. With ``m == w``
every number is the one above: :class:`FatTree` is the ``m == w`` case of the one class.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple

from ..params import check_int_range, check_positive_int

__all__ = ["Link", "GeneralizedFatTree", "FatTree"]

_SHORT = {"up": "U", "down": "D", "inject": "I", "eject": "E"}


class Link(NamedTuple):
    """One direction of one cable.

    ``direction`` is ``"up"`` or ``"down"`` for a cable between levels ``level`` and
    ``level + 1`` (named by the lower switch ``SW(level, switch)`` and its up port ``port``,
    as the paper's ``Ulink``/``Dlink``), or ``"inject"``/``"eject"`` for the cable between
    node ``switch * w + port`` and down port ``port`` of leaf switch ``SW(0, switch)``
    (``level`` is then 0).
    """

    direction: str
    level: int
    switch: int
    port: int

    def __str__(self) -> str:
        if self.direction in ("inject", "eject"):
            return f"{_SHORT[self.direction]}({self.switch},{self.port})"
        return f"{_SHORT[self.direction]}({self.level},{self.switch},{self.port})"


class GeneralizedFatTree:
    """FT(levels, m, w): ``m**levels`` nodes, switches with ``m`` children and ``w`` parents.

    :class:`FatTree` is its ``m == w`` case, FT(l, w) = FT(l, w, w); see the module docstring
    for the construction and the switch numbering.

    Parameters
    ----------
    levels : int
        Switch levels ``l``, at least 1.
    m : int
        Children (down ports) of every switch, at least 2.
    w : int
        Parents (up ports) of every switch below the top, at least 2.

    Raises
    ------
    TypeError, ValueError
        ``"levels must be a positive integer, not 0"``, ``"m must be at least 2, not 1"``,
        ``"w must be at least 2, not 1"``.
    """

    def __init__(self, levels: int, m: int, w: int):
        self.levels = check_positive_int("levels", levels)
        self.m = check_int_range("m", m, 2)
        self.w = check_int_range("w", w, 2)
        #: Nodes, ``m**levels``.
        self.num_nodes = m**levels
        #: The most switches of any level (level 0 or the top); ``w**(l-1)`` when ``m == w``,
        #: as :attr:`FatTree.num_switches`.
        self.num_switches = max(m, w) ** (levels - 1)
        self._switch_counts_by_level: dict[int, int] = {}

    @functools.cached_property
    def switch_counts(self) -> tuple[int, ...]:
        """Switches of each level, ``m**(l-1-h) * w**h`` (made when first asked for: a tree
        of absurdly many levels is refused by its users, not built here)."""
        m, w, levels = self.m, self.w, self.levels
        return tuple(m ** (levels - 1 - h) * w**h for h in range(levels))

    def __repr__(self) -> str:
        return f"GeneralizedFatTree(levels={self.levels}, m={self.m}, w={self.w})"

    def __eq__(self, other) -> bool:
        # A FatTree equals only a FatTree, a GeneralizedFatTree only a GeneralizedFatTree.
        return type(other) is type(self) and (self.levels, self.m, self.w) == (
            other.levels,
            other.m,
            other.w,
        )

    def __hash__(self) -> int:
        return hash((type(self), self.levels, self.m, self.w))

    def name(self) -> str:
        """``FT(l, w)`` when ``m == w`` (the paper's short form), else ``FT(l, m, w)``."""
        if self.m == self.w:
            return f"FT({self.levels}, {self.w})"
        return f"FT({self.levels}, {self.m}, {self.w})"

    # -- enumeration ---------------------------------------------------------------------

    def nodes(self) -> range:
        """Node numbers ``0 .. m**levels - 1``."""
        return range(self.num_nodes)

    def switch_count(self, level: int) -> int:
        """Switches of ``level``: ``m**(l-1-level) * w**level``."""
        self.check_level(level)
        return self._switch_count(level)

    def _switch_count(self, level: int) -> int:
        # Remembered: every switch argument is checked against it, once per call.
        count = self._switch_counts_by_level.get(level)
        if count is None:
            count = self.m ** (self.levels - 1 - level) * self.w**level
            self._switch_counts_by_level[level] = count
        return count

    def switches(self, level: int) -> range:
        """Switch indices ``t`` of ``SW(level, t)``."""
        return range(self.switch_count(level))

    def ports(self) -> range:
        """Up port numbers of a switch: ``0 .. w-1`` (the ``P_h`` a request chooses)."""
        return range(self.w)

    def down_ports(self) -> range:
        """Down port numbers of a switch: ``0 .. m-1``."""
        return range(self.m)

    def link_levels(self) -> range:
        """Levels that have up links (and the matching down links): ``0 .. levels-2``."""
        return range(self.levels - 1)

    def up_links(self) -> list[Link]:
        """Every ``Ulink(h, t, i)``, level by level, switch by switch, port by port."""
        return [
            Link("up", h, t, i)
            for h in self.link_levels()
            for t in range(self.switch_counts[h])
            for i in range(self.w)
        ]

    def digits(self, level: int, index: int) -> list[int]:
        """Mixed-radix digits of a switch index of ``level``, least significant first: ``h``
        base-w digits (``P_{h-1} .. P_0``), then the ``l-1-h`` base-m digits above ``h``."""
        self.check_level(level)
        self._check_switch(level, "switch", index)
        low = [(index // self.w**i) % self.w for i in range(level)]
        high = index // self.w**level
        return low + [(high // self.m**i) % self.m for i in range(self.levels - 1 - level)]

    # -- wiring --------------------------------------------------------------------------

    def node_switch(self, node: int) -> tuple[int, int]:
        """``(t, p)``: node ``node`` hangs on down port ``p`` of leaf switch ``SW(0, t)``."""
        self._check_node("node", node)
        return divmod(node, self.m)

    def attached_node(self, switch: int, port: int) -> int:
        """The node on down port ``port`` of leaf switch ``SW(0, switch)``."""
        self._check_switch(0, "switch", switch)
        check_int_range("port", port, 0, self.m - 1)
        return switch * self.m + port

    def next_switch(self, level: int, switch: int, port: int) -> int:
        """Theorem 1 for FT(l, m, w): up port ``port`` of ``SW(level, switch)`` leads to
        ``SW(level+1, (t div (m w**h)) * w**(h+1) + (t mod w**h) * w + port)``: the base-m
        digit ``h`` drops out, the ``h`` port digits shift up one and ``port`` becomes digit 0."""
        self._check_up_level(level)
        self._check_switch(level, "switch", switch)
        self._check_port("port", port)
        return self._next(level, switch, port)

    def _next(self, h: int, t: int, port: int) -> int:
        low = self.w**h
        return (t // (self.m * low)) * low * self.w + (t % low) * self.w + port

    def up_neighbour(self, level: int, switch: int, port: int) -> tuple[int, int, int]:
        """``(level + 1, parent, down_port)``: where up port ``port`` of ``SW(level, switch)``
        leads, and on which down port of the parent it arrives (the dropped base-m digit)."""
        parent = self.next_switch(level, switch, port)
        return level + 1, parent, (switch // self.w**level) % self.m

    def down_neighbour(self, level: int, switch: int, port: int) -> tuple[int, int, int]:
        """``(level - 1, child, up_port)``: where down port ``port`` of ``SW(level, switch)``
        leads (``level >= 1``), and on which up port of the child it arrives."""
        if not isinstance(level, int) or isinstance(level, bool):
            raise TypeError(f"level must be an integer, not {level!r}")
        if not 1 <= level < self.levels:
            raise ValueError(
                f"level must be between 1 and {self.levels - 1} for a switch with switches "
                f"below it, not {level!r}"
            )
        self._check_switch(level, "switch", switch)
        check_int_range("port", port, 0, self.m - 1)
        # The parent's low port digits are the child's, shifted up, then the child's up port;
        # the base-m digit the child drops is the down port.
        low = self.w**level
        up_port = switch % self.w
        child = ((switch // low) * self.m + port) * self.w ** (level - 1) + (switch % low) // self.w
        return level - 1, child, up_port

    # -- routes --------------------------------------------------------------------------

    def common_level(self, src: int, dst: int) -> int:
        """Lowest common level ``H`` of two nodes: one more than the highest base-m digit in
        which their leaf switches differ, 0 when they share one. A route uses ``H`` up ports."""
        self._check_node("src", src)
        self._check_node("dst", dst)
        s, d = src // self.m, dst // self.m
        level = 0
        while s != d:
            s //= self.m
            d //= self.m
            level += 1
        return level

    def ancestor(self, switch: int, ports: Sequence[int]) -> int:
        """Equation (9): the switch at level ``len(ports)`` reached from leaf switch
        ``SW(0, switch)`` through up ports ``P_0, P_1, ..``: ``(s_0 div m**h) * w**h +
        sum(P_i * w**(h-1-i))``."""
        self._check_switch(0, "switch", switch)
        ports = self._check_ports(ports, len(ports))
        h = len(ports)
        if h > self.levels - 1:
            raise ValueError(
                f"ports must have at most {self.levels - 1} entries in {self.name()}, not {h}"
            )
        index = (switch // self.m**h) * self.w**h
        for i, p in enumerate(ports):
            index += p * self.w ** (h - 1 - i)
        return index

    def up_path(self, src: int, ports: Sequence[int]) -> list[Link]:
        """``Ulink(h, s_h, P_h)`` for ``h = 0 .. len(ports) - 1``, from node ``src``."""
        self._check_node("src", src)
        start = src // self.m
        return [
            Link("up", h, self.ancestor(start, ports[:h]), p)
            for h, p in enumerate(self._check_ports(ports, len(ports)))
        ]

    def down_path(self, dst: int, ports: Sequence[int]) -> list[Link]:
        """Theorem 2's mirrored path: ``Dlink(h, d_h, P_h)`` for ``h = len(ports) - 1 .. 0``,
        top first, as a message travels to node ``dst``."""
        self._check_node("dst", dst)
        start = dst // self.m
        ports = self._check_ports(ports, len(ports))
        return [
            Link("down", h, self.ancestor(start, ports[:h]), ports[h])
            for h in reversed(range(len(ports)))
        ]

    def route(self, src: int, dst: int, ports: Sequence[int]) -> list[Link]:
        """Every link of the connection ``src -> dst`` with up ports ``ports`` (exactly ``H =
        common_level(src, dst)`` of them), in travel order: inject, up, down, eject."""
        height = self.common_level(src, dst)
        ports = self._check_ports(ports, height, src=src, dst=dst)
        s, sp = divmod(src, self.m)
        d, dp = divmod(dst, self.m)
        return (
            [Link("inject", 0, s, sp)]
            + self.up_path(src, ports)
            + self.down_path(dst, ports)
            + [Link("eject", 0, d, dp)]
        )

    # -- validation ----------------------------------------------------------------------

    def check_level(self, level: int) -> int:
        return check_int_range("level", level, 0, self.levels - 1)

    def _check_up_level(self, level: int) -> int:
        if not isinstance(level, int) or isinstance(level, bool):
            raise TypeError(f"level must be an integer, not {level!r}")
        if not 0 <= level < self.levels - 1:
            if self.levels == 1:
                raise ValueError(f"{self.name()} has no up links, level {level!r} has none")
            raise ValueError(
                f"level must be between 0 and {self.levels - 2} for an up port "
                f"(the top level has none), not {level!r}"
            )
        return level

    def _check_node(self, name: str, value: int) -> int:
        return check_int_range(name, value, 0, self.num_nodes - 1)

    def _check_switch(self, level: int, name: str, value: int) -> int:
        return check_int_range(name, value, 0, self._switch_count(level) - 1)

    def _check_port(self, name: str, value: int) -> int:
        return check_int_range(name, value, 0, self.w - 1)

    def _check_ports(self, ports, count: int, *, src=None, dst=None) -> tuple[int, ...]:
        if isinstance(ports, (str, bytes)) or not isinstance(ports, Sequence):
            raise TypeError(f"ports must be a sequence of integers, not {ports!r}")
        if len(ports) != count:
            raise ValueError(
                f"ports must have {count} entries (the common level of nodes {src} and "
                f"{dst} in {self.name()}), not {len(ports)}"
            )
        for i, p in enumerate(ports):
            self._check_port(f"ports[{i}]", p)
        return tuple(ports)


class FatTree(GeneralizedFatTree):
    """The fat-tree FT(levels, w): ``w**levels`` nodes, ``levels`` levels of w x w switches.

    FT(levels, w, w) of :class:`GeneralizedFatTree`: every level has ``w**(levels-1)``
    switches, and a switch index is ``levels - 1`` base-w digits. Only its name, its equality
    (a ``FatTree`` equals a ``FatTree``) and :meth:`digits` (no level argument: every level
    numbers its switches alike) are its own.

    Parameters
    ----------
    levels : int
        Number of switch levels ``l``, at least 1 (``FT(1, w)`` is a single switch).
    w : int
        Children and parents of every switch, at least 2.

    Raises
    ------
    TypeError, ValueError
        ``"levels must be a positive integer, not 0"``, ``"w must be at least 2, not 1"``.
    """

    def __init__(self, levels: int, w: int):
        check_positive_int("levels", levels)
        # Checked here first so that a bad w is named w, not m.
        super().__init__(levels, check_int_range("w", w, 2), w)

    def __repr__(self) -> str:
        return f"FatTree(levels={self.levels}, w={self.w})"

    def digits(self, index: int) -> list[int]:
        """Base-w digits of a switch index, least significant first: ``[t_0, .., t_{l-2}]``."""
        return super().digits(0, index)
