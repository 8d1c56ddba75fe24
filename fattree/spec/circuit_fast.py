"""The fast circuit tree's protocol as data: Strumpen-Krishnamurthy's tree reworked to carry
traffic (``circuit-tree``).

Same topology as ``circuit-tree-paper`` (:class:`fattree.spec.topology.FatTree` ``(h, 2)``, ``n =
2^h`` nodes; router ``SW(r, t)`` at level ``r`` with ports ``a``, ``b`` down and ``c``, ``d``
up, wired as :mod:`fattree.hdl.circuit_tree` wires them) and the same stream ports at every
node, but another protocol: **one cycle per hop**, a circuit **held only while its message
passes**, a head that finds its output taken **dropped** (its source hears no
acknowledgement at the fixed time it expects one), and a **window** of
messages in flight per node, resent until delivered. What follows is the whole behaviour; the
hardware (:mod:`fattree.hdl.circuit_fast`) and the model (:mod:`fattree.sim.models.
circuit_fast`) are both written from it. docs/circuit_tree.md, "The fast protocol", draws it.

Cycles. Every value named "at cycle t" is a register output visible during cycle ``t``;
registers load at the clock edge that ends a cycle. All outputs of every block are registers.

**Links.** One link direction carries forward ``valid``, ``head``, ``dest`` (``h`` bits) and
``data`` (``width`` bits), and backward ``ack`` (1 bit): :func:`link_fields`. A message of
``length`` = ``P`` words is ``P`` consecutive valid cycles, ``head`` high on the first; every
word carries the message's ``dest``. Link ``l`` has a **mirror delay** ``f(l)``
(:func:`mirror_delay`): the fate of a head that is on ``l`` at cycle ``tau`` is on ``l``'s
``ack`` at cycle ``tau + f(l)``: 1 if the head was accepted by its receiver, 0 if it was
dropped anywhere downstream (or lost: a link that carries nothing acknowledges nothing).

**Router** ``SW(r, t)``, in every cycle ``tau``, from its inputs' link values at ``tau``:

1. *Hold.* An input ``i`` holds an output from the cycle its head is granted it until the
   last word of that message: in a cycle where ``i`` has ``valid`` and not ``head`` and is
   not dead, it still holds it and that word is forwarded on it. An input with ``valid`` low,
   or with a new ``head``, holds nothing any more in that cycle. An output is **busy** at
   ``tau`` if an input holds it at ``tau`` (a body word passes).
2. *Route.* A head on ``a`` or ``b`` turns if ``dest >> (r + 1) == subtree(r, t)``
   (:func:`subtree`) and goes up otherwise; a head on ``c`` or ``d`` goes down. Down or
   turning, it wants down port ``a`` if bit ``r`` of ``dest`` is 0, else ``b``.
3. *Up.* Up port ``c`` if ``x XOR e`` is 0, else ``d``, with ``e`` = 0 for ``a``, 1 for
   ``b``, and ``x`` the router's LFSR bit at ``tau``: bit 0 of the state at ``tau`` of the
   16-bit LFSR of :mod:`fattree.spec.lfsr` (default taps) seeded
   :func:`fattree.spec.circuit.router_seed` ``(seed, r, t)``, which holds its seed at the
   first cycle after reset and steps once per cycle (as in ``circuit-tree-paper``). The other up
   port if that one is busy. Two heads on ``a`` and ``b`` thus always take different up
   ports; going up never fails.
4. *Down.* Of the heads that want a down port which is not busy, one is granted, in this
   order: from ``a``, from ``b``, then from ``c`` before ``d`` if ``x`` is 0, else ``d``
   before ``c``. Every other head that wants it, and every head that wants a busy down
   port, is **dropped**: its input is *dead* until its next head (the message's body words
   are ignored). A head to its own node turns back out of the port it came in on.
5. *Forward.* A granted head and the body words of held outputs go out on their output at
   ``tau + 1`` (the output register: ``valid``, ``head``, ``dest``, ``data`` of that input);
   an output nothing goes out on has ``valid`` 0 (and ``head``, ``dest``, ``data`` 0).
6. *Acknowledgement, by the mirror.* For the head on input ``i`` at ``tau``: if it is
   dropped, ``ack`` on ``i`` is 0 at ``tau + f(i)``. If it is granted output ``o``, ``ack``
   on ``i`` at ``tau + f(i)`` is the ``ack`` seen on ``o`` at ``tau + 1 + f(o)`` (``f(i) -
   f(o) - 1`` cycles earlier: :func:`turn_pad` + 1 cycles). ``ack`` on ``i`` is 0 at any
   cycle not so
   defined. At most one head is on a link in a cycle, so at most one head owns each cycle of
   each ``ack`` wire: acknowledgements never collide.

**Interface** of node ``n`` (parameters ``length`` = ``P``, ``window`` = ``W``):

* *Slots.* ``W`` message slots, each FREE, READY (to be sent) or SENT (its fate pending).
  ``tx.ready`` at ``t`` is 1 if a slot is FREE at ``t``. At a ``tx`` handshake at ``t`` the
  message is stored in the FREE slot of lowest index, READY from ``t + 1``.
* *Send.* The inject link is idle at ``t`` if it carries no word of a message at ``t``, or
  carries its last word. When it is idle at ``t``, the interface picks the next message to
  send: the first READY slot after the last slot picked, in cyclic index order (slot 0
  first after reset); if no slot is READY at ``t``, the message of a ``tx`` handshake at
  ``t`` (its slot is then SENT from ``t + 1`` and never READY). The picked slot becomes the
  last slot picked. The picked message's head is on the
  inject link at ``t0 = t + 1`` (word ``k`` at ``t0 + k``), and its slot is SENT from
  ``t + 1``.
* *Fate.* At ``t0 + F`` (:func:`fate_delay`, ``F = f(inject)``) the inject link's ``ack``
  is the fate of that attempt: 0 -> the slot is READY from ``t0 + F + 1`` and ``tx_reject``
  is 1 at ``t0 + F + 1``; 1 -> the slot is FREE from ``t0 + F + 1`` and ``tx_done`` is 1 at
  ``t0 + F + 1``. (Both are one-cycle pulses; at most one fate arrives per cycle.)
* *Receive.* One received message is stored at most (``rx.valid``, ``rx.payload.data``: the
  ``P`` words, word 0 low). A head on the eject link at ``tau`` is **accepted** unless a
  stored message is there at ``tau`` and not taken at ``tau`` (``rx.valid`` and not
  ``rx.ready``): the eject link's ``ack`` is 1 at ``tau + 1`` (its mirror delay). A head
  that is not accepted leaves ``ack`` 0 there, and the rest of its message is ignored. The
  words of an accepted message are collected; at the cycle ``tau + P - 1`` of its last word,
  if no stored message is there at that cycle,
  ``rx.valid`` is 1 and the payload is the collected words with the last one straight from
  the link (*cut-through*); the message is stored at the edge unless taken. A stored message
  is presented (``rx.valid`` 1) until taken. (A stored message is there at ``tau + P - 1``
  only if ``P`` = 1 and it is taken at ``tau``: the new message is then stored at the edge
  and presented from ``tau + 1``.)

Reset clears every register (synchronous, whole network); the LFSRs restart from their seeds.

Exactly once: a delivered message's head was accepted, so its fate is 1 and its slot is
freed; a dropped head was never delivered, so its fate is 0 and it is sent again. A message
lost to a faulty link is not acknowledged either: it is sent again, never counted delivered.

**Faults** (``faults``, :mod:`fattree.spec.faults` with the wires :data:`FAULT_WIRES`: the
paper tree's places and kinds) change what a faulty link direction's receiver reads on its
forward wires and its sender reads on ``ack``; the routers and interfaces follow the rules
above on what they read. A link that reads ``valid`` 0 carries no word (its ``head`` is read
only with ``valid``), so a head sent into it is lost: nobody owns the cycles of its fate,
and a sender reads 0 in a cycle nobody owns. A **dead** link reads ``valid`` 0 and ``ack``
0. A link with ``valid`` stuck at 1 reads a word in every cycle: when its sender sends none,
a body word of zeros (``dest`` and ``data`` read as their stuck bits say), which extends the
hold of the input it enters (rule 1) and goes nowhere on an input that holds nothing. Stuck
``destK`` and ``dataK`` bits corrupt every word: a head with a wrong ``dest`` is routed by
it, and may be delivered, and acknowledged, at another node. ``ack`` stuck at 0 makes every
head sent on the link read as dropped (a delivered message is sent again, and delivered
again); ``ack`` stuck at 1 makes it read as accepted, in the cycle its fate is due (the
only cycles the rules read): a head dropped or lost beyond that link is acknowledged and
never sent again.
"""

from __future__ import annotations

from ..params import Contract, Param
from .faults import canonical_faults
from .topology import Link

__all__ = [
    "CIRCUIT_TREE_FAST",
    "FAULT_WIRES",
    "link_fields",
    "mirror_delay",
    "link_delay",
    "fate_delay",
    "turn_pad",
    "subtree",
    "UP",
    "DOWN",
]

#: Directions of a link, for :func:`mirror_delay`.
UP, DOWN = "up", "down"


def link_fields(leaves: int, width: int) -> dict[str, int]:
    """The forward fields of one link direction, low bits first (the backward wire is one
    ``ack`` bit)."""
    return {"valid": 1, "head": 1, "dest": leaves.bit_length() - 1, "data": width}


def mirror_delay(h: int, direction: str, level: int) -> int:
    """``f(l)`` of a link of a tree of ``2^h`` nodes: ``UP`` into level ``level`` (the inject
    link of a node is ``UP`` into level 0) is ``4h - 1 - 2 level``; ``DOWN`` out of level
    ``level`` (the eject link is ``DOWN`` out of level 0) is ``1 + 2 level``."""
    if not 0 <= level < h:
        raise ValueError(f"level must be 0..{h - 1}, not {level}")
    if direction == UP:
        return 4 * h - 1 - 2 * level
    if direction == DOWN:
        return 1 + 2 * level
    raise ValueError(f"direction must be {UP!r} or {DOWN!r}, not {direction!r}")


def link_delay(h: int, link: Link) -> int:
    """``f(l)`` of a link named as :class:`fattree.spec.topology.Link` names it (``up``:
    from ``SW(level, .)`` up into ``level + 1``; ``down``: the other direction; ``inject``,
    ``eject``: a node's cables)."""
    if link.direction == "inject":
        return mirror_delay(h, UP, 0)
    if link.direction == "eject":
        return mirror_delay(h, DOWN, 0)
    return mirror_delay(h, UP if link.direction == "up" else DOWN, link.level + 1)


def fate_delay(h: int) -> int:
    """``F``: cycles from a head on the inject link to its fate on that link's ``ack``."""
    return mirror_delay(h, UP, 0)


def turn_pad(h: int, level: int) -> int:
    """Extra cycles a router at ``level`` holds the acknowledgement of a turned head, beyond
    the one cycle it takes straight through: ``f(in) - f(out) - 2`` = ``4 (h - 1 - level)`` (0
    going up or down)."""
    return mirror_delay(h, UP, level) - mirror_delay(h, DOWN, level) - 2


def subtree(level: int, switch: int) -> int:
    """The subtree of router ``SW(level, switch)`` of ``FatTree(h, 2)``: the nodes below it
    are those with ``node >> (level + 1)`` equal to this."""
    return switch >> level


#: The wires a stuck-at fault may name on a link (:mod:`fattree.spec.faults`): forward
#: ``valid``, ``destK``, ``dataK``, backward ``ack``. ``head`` is not offered: a message is
#: framed by it, and a stuck ``head`` makes every word a message of its own.
FAULT_WIRES = ("valid", "dest", "data", "ack")


def _canonical_faults(text: str) -> str:
    return canonical_faults(text, FAULT_WIRES)


#: The fast circuit tree's parameters: the design table's, and what ``CircuitFastTree`` and
#: ``CircuitFastTreeModel`` check.
CIRCUIT_TREE_FAST = Contract(
    "circuit-tree",
    (
        Param("leaves", 16, "processing nodes (a power of two)", lo=2, hi=256, power_of_two=True),
        Param("width", 8, "data wires per link direction", lo=1, hi=64),
        Param("length", 2, "data words per message", lo=1, hi=64),
        Param("seed", 1, "seed of the routers' LFSRs", lo=0),
        Param(
            "window",
            8,
            "messages each node keeps in flight (a power of two)",
            lo=1,
            hi=16,
            power_of_two=True,
        ),
        # Checked against the network it is in (fattree.spec.faults.check_faults).
        Param(
            "faults",
            "",
            "dead links/routers, stuck wires: up:L.T.P,down:L.T.P,inject:N,eject:N,"
            "router:L.T, a link with /WIRE=0|1, WIRE valid, destK, dataK or ack "
            "(docs/circuit_tree_fast.md, Faults)",
            text=_canonical_faults,
        ),
    ),
)
