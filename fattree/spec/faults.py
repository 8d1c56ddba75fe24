"""Faults of the circuit-switched fat trees: dead links, dead routers, stuck-at wires.

A fault list is a parameter of the network (``CircuitFatTree(faults=...)``,
``CircuitTreeModel(faults=...)``, ``--param faults=...``), not an edit of the code. The
hardware and the model both read it through :func:`link_faults`: per link direction, what
its receiver reads on the forward wires (``valid``, ``data``) and its sender reads on the
backward wires (``reject``, ``ack``).

The fast circuit tree (``circuit-tree``, :mod:`fattree.spec.circuit_fast`) takes the same
places and kinds on its own wires (its ``FAULT_WIRES``: forward ``valid``, ``destK``,
``dataK``, backward ``ack``; no ``reject``): the functions below take the network's
``wires``, :data:`WIRES` (the paper tree's) by default.

Links are named as :class:`fattree.spec.topology.Link` names them, with ``w = 2``:

* ``up:L.T.P`` is ``Ulink(L, T, P)``: up port ``P`` (0 = ``c``, 1 = ``d``) of router
  ``SW(L, T)`` to its parent; ``down:L.T.P`` is ``Dlink(L, T, P)``, the other direction of
  the same cable (``L`` in ``0 .. h - 2``);
* ``inject:N`` is node ``N``'s cable into its leaf router, ``eject:N`` the leaf router's
  cable to node ``N``;
* ``router:L.T`` is every link, both directions, on the four ports of ``SW(L, T)``.

Kinds:

* **dead** (the name alone, e.g. ``up:1.3.0``): the link carries nothing. Its forward wires
  read 0 (idle) at the receiver, its backward ``reject`` and ``ack`` read 0 at the sender,
  so a message sent into it is neither acknowledged nor rejected.
* **stuck0** / **stuck1** (``/WIRE=0`` or ``/WIRE=1`` after the link, e.g.
  ``down:0.2.1/data0=1``): one wire reads the constant. ``WIRE`` is ``valid``, ``dataK``
  (bit ``K`` of the data, ``0 .. width - 1``), ``reject`` or ``ack``; on the fast tree's
  links also ``destK`` (bit ``K`` of ``dest``, ``0 .. lg leaves - 1``), and no ``reject``.

A list is comma-separated (``up:1.3.0,down:2.0.1,router:1.2``); ``none`` or the empty text
is no fault. Where two faults touch one wire, the later one wins (a dead router with
``/ack=1`` on one of its links reads ``ack`` high there).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .topology import FatTree, Link

__all__ = [
    "DIRECTIONS",
    "KINDS",
    "WIRES",
    "Fault",
    "LinkFault",
    "parse_faults",
    "format_faults",
    "canonical_faults",
    "check_faults",
    "link_faults",
    "tree_links",
]

#: Link directions of a fault (``router`` stands for all links of one router).
DIRECTIONS = ("up", "down", "inject", "eject", "router")
KINDS = ("dead", "stuck0", "stuck1")
#: Wires of one link direction: forward ``valid`` and ``data``, backward ``reject``, ``ack``.
WIRES = ("valid", "data", "reject", "ack")


@dataclass(frozen=True)
class Fault:
    """One fault. ``where`` is ``"up"``/``"down"`` (``level``, ``switch``, ``port``),
    ``"inject"``/``"eject"`` (``switch`` is the node), or ``"router"`` (``level``,
    ``switch``). ``kind`` is ``"dead"`` or, on one ``wire`` (bit ``bit`` of ``data``),
    ``"stuck0"``/``"stuck1"``."""

    where: str
    level: int = 0
    switch: int = 0
    port: int = 0
    kind: str = "dead"
    wire: str = ""
    bit: int = 0

    def __str__(self) -> str:
        if self.where in ("up", "down"):
            text = f"{self.where}:{self.level}.{self.switch}.{self.port}"
        elif self.where == "router":
            text = f"router:{self.level}.{self.switch}"
        else:
            text = f"{self.where}:{self.switch}"
        if self.kind == "dead":
            return text
        wire = f"{self.wire}{self.bit}" if self.wire in ("data", "dest") else self.wire
        return f"{text}/{wire}={self.kind[-1]}"

    def links(self, leaves: int) -> list[Link]:
        """The link directions this fault touches, as :class:`Link` s."""
        if self.where in ("up", "down"):
            return [Link(self.where, self.level, self.switch, self.port)]
        if self.where in ("inject", "eject"):
            t, p = divmod(self.switch, 2)
            return [Link(self.where, 0, t, p)]
        tree = FatTree(leaves.bit_length() - 1, 2)
        level, t = self.level, self.switch
        found = []
        for p in (0, 1):
            if level == 0:
                found += [Link("inject", 0, t, p), Link("eject", 0, t, p)]
            else:
                _, child, up_port = tree.down_neighbour(level, t, p)
                found += [Link(d, level - 1, child, up_port) for d in ("up", "down")]
        if level < tree.levels - 1:
            found += [Link(d, level, t, p) for p in (0, 1) for d in ("up", "down")]
        return found


@dataclass(frozen=True)
class LinkFault:
    """What one faulty link direction's wires read: the receiver's ``valid`` and ``data``
    (and on the fast tree ``dest``), the sender's ``reject`` and ``ack``. ``None`` is the
    healthy wire; data reads ``(data & data_and) | data_or``, dest likewise."""

    valid: int | None = None
    data_and: int = -1
    data_or: int = 0
    reject: int | None = None
    ack: int | None = None
    dest_and: int = -1
    dest_or: int = 0

    def forward(self, valid: int, data: int) -> tuple[int, int]:
        """The receiver's ``(valid, data)`` when the sender drives ``valid``, ``data``."""
        return (valid if self.valid is None else self.valid), (data & self.data_and) | self.data_or

    def backward(self, reject: int, ack: int) -> tuple[int, int]:
        """The sender's ``(reject, ack)`` when the receiver drives ``reject``, ``ack``."""
        return (reject if self.reject is None else self.reject), (
            ack if self.ack is None else self.ack
        )


_LINK = re.compile(r"^(up|down):(\d+)\.(\d+)\.(\d+)$|^(inject|eject):(\d+)$|^router:(\d+)\.(\d+)$")
_WIRE = re.compile(r"^(valid|reject|ack|(data|dest)(\d+))=([01])$")
_FORMS = "up:L.T.P, down:L.T.P, inject:N, eject:N or router:L.T, optionally /WIRE=0|1"


def _wire_forms(wires) -> str:
    """``/valid=V, /dataK=V, /reject=V or /ack=V`` for ``wires``."""
    forms = [f"/{w}K=V" if w in ("data", "dest") else f"/{w}=V" for w in wires]
    return ", ".join(forms[:-1]) + f" or {forms[-1]}"


def parse_faults(text: str, wires: tuple[str, ...] = WIRES) -> tuple[Fault, ...]:
    """``"up:1.3.0,down:0.2.1/data0=1"`` -> the :class:`Fault` s (syntax only; check the
    numbers against a network with :func:`check_faults`), for links whose stuck wires are
    ``wires``. ``ValueError`` in one line naming the bad fault."""
    if not isinstance(text, str):
        raise TypeError(f"faults must be a string, not {text!r}")
    text = text.strip()
    if text in ("", "none"):
        return ()
    faults = []
    for item in text.split(","):
        item = item.strip()
        link, _, wire = item.partition("/")
        match = _LINK.match(link)
        if not match:
            raise ValueError(f"fault {item!r} is not one of {_FORMS}")
        g = match.groups()
        if g[0]:
            fault = Fault(g[0], int(g[1]), int(g[2]), int(g[3]))
        elif g[4]:
            fault = Fault(g[4], 0, int(g[5]))
        else:
            fault = Fault("router", int(g[6]), int(g[7]))
        if wire or "/" in item:
            w = _WIRE.match(wire)
            forms = _wire_forms(wires)
            if not w or fault.where == "router":
                raise ValueError(
                    f"fault {item!r}: a stuck wire is {forms} (V 0 or 1) on a link, not on a router"
                )
            name = w.group(2) or w.group(1)
            if name not in wires:
                raise ValueError(
                    f"fault {item!r}: these links have no {name} wire (a stuck wire is {forms}, "
                    "V 0 or 1)"
                )
            bit = int(w.group(3)) if w.group(3) is not None else 0
            fault = Fault(
                fault.where, fault.level, fault.switch, fault.port, f"stuck{w.group(4)}", name, bit
            )
        faults.append(fault)
    return tuple(faults)


def format_faults(faults: Iterable[Fault]) -> str:
    """The text form :func:`parse_faults` reads (``""`` for no fault)."""
    return ",".join(str(f) for f in faults)


def canonical_faults(text: str, wires: tuple[str, ...] = WIRES) -> str:
    """A ``--param faults=TEXT`` value in its one written form (``none`` -> ``""``); blank
    text is refused, so a lost value is not taken for "no fault"."""
    if not text.strip():
        raise ValueError("a fault list is comma-separated faults, or none; not blank")
    return format_faults(parse_faults(text, wires))


def check_faults(faults, leaves: int, width: int, wires: tuple[str, ...] = WIRES):
    """A fault list (text, or :class:`Fault` s) checked against a network of ``leaves``
    nodes and ``width`` data wires whose links' stuck wires are ``wires``; ``ValueError`` in
    one line for a fault that names no link or wire of it."""
    if isinstance(faults, str):
        faults = parse_faults(faults, wires)
    faults = tuple(faults)
    h = leaves.bit_length() - 1
    for f in faults:
        if not isinstance(f, Fault):
            raise TypeError(f"faults must be Fault objects or their text, not {f!r}")
        if f.where not in DIRECTIONS or f.kind not in KINDS:
            raise ValueError(f"fault {f!r} has an unknown place or kind")
        if f.where in ("up", "down"):
            bad = _range("level", f.level, h - 1) or _range("router", f.switch, leaves // 2)
            bad = bad or _range("port", f.port, 2)
            if h < 2:
                bad = f"a tree of {leaves} leaves has no links between routers"
        elif f.where in ("inject", "eject"):
            bad = _range("node", f.switch, leaves)
        else:
            bad = _range("level", f.level, h) or _range("router", f.switch, leaves // 2)
        if f.kind != "dead":
            if f.wire not in wires:
                bad = bad or f"wire must be one of {', '.join(wires)}, not {f.wire!r}"
            elif f.wire == "data":
                bad = bad or _range("data bit", f.bit, width)
            elif f.wire == "dest":
                bad = bad or _range("dest bit", f.bit, h)
        if bad:
            raise ValueError(f"fault {str(f)!r}: {bad} ({leaves} leaves, width {width})")
    return faults


def _range(name: str, value: int, count: int) -> str:
    if not isinstance(value, int) or not 0 <= value < count:
        return f"{name} must be 0..{count - 1}, not {value!r}" if count else f"no {name}"
    return ""


def link_faults(faults, leaves: int, width: int, wires: tuple[str, ...] = WIRES):
    """Per faulty link direction, what its wires read (:class:`LinkFault`); healthy links
    are absent, so no fault gives ``{}``. ``wires`` as :func:`check_faults`."""
    faults = check_faults(faults, leaves, width, wires)
    found: dict[Link, dict] = {}
    # The wires with bits: data, and dest where the links have it.
    full = {"data": (1 << width) - 1}
    if "dest" in wires:
        full["dest"] = leaves - 1
    for f in faults:
        for link in f.links(leaves):
            w = found.setdefault(link, {f"{name}_and": mask for name, mask in full.items()})
            if f.kind == "dead":
                w.update(valid=0, reject=0, ack=0)
                w.update({f"{name}_{op}": 0 for name in full for op in ("and", "or")})
            elif f.wire in full:
                value = int(f.kind == "stuck1") << f.bit
                keep, force = f"{f.wire}_and", f"{f.wire}_or"
                w[keep] = w[keep] & ~(1 << f.bit) & full[f.wire]
                w[force] = (w.get(force, 0) & ~(1 << f.bit)) | value
            else:
                w[f.wire] = int(f.kind == "stuck1")
    return {link: LinkFault(**w) for link, w in found.items()}


def tree_links(leaves: int) -> list[Link]:
    """Every link direction of the ``leaves``-node circuit tree: ``inject``/``eject`` per
    node, then ``up``/``down`` per router level, router and up port."""
    tree = FatTree(leaves.bit_length() - 1, 2)
    links = [
        Link(d, 0, t, p)
        for d in ("inject", "eject")
        for t, p in map(tree.node_switch, range(leaves))
    ]
    return links + [
        Link(d, lk.level, lk.switch, lk.port) for lk in tree.up_links() for d in ("up", "down")
    ]
