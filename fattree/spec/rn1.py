"""The RN1 router's channel protocol as data (DeHon 1993, "Practical schemes for fat-tree
network construction", section on RN1; Knight 1989, DeHon-Knight-Minsky 1990).

What the router (:mod:`fattree.hdl.rn1`), its reference model (:mod:`fattree.sim.models.rn1`)
and the checks agree on: the nine-bit channel word, its codes, the two modes and which
outputs serve a direction in each, how the head byte names a direction and is passed on, and
how the router's LFSR is seeded. The timing and every choice the paper leaves open are in
docs/dehon.md.

A *channel* is a pair of nine-bit links: ``fwd`` from the sender to the receiver and ``bk``
back. Both carry *words* ``data | ctrl << 8`` (an ``amaranth.lib.data`` struct of ``data``,
8 bits, then ``ctrl``, 1 bit, lays them out the same way):

* ``ctrl = 1``: one byte of a transmission. The first such word after ``ctrl = 0`` is the
  *head*: its two low bits name the direction.
* ``ctrl = 0``: no byte. The first ``ctrl = 0`` word after a byte *closes* the transmission
  (the ninth bit "signals the beginning and end of transmissions"); its ``data`` says how:
  :data:`TURN` reverses the connection, anything else (:data:`DROP`, the idle word 0) ends it.
  Later ``ctrl = 0`` words are idle, except the two *status* codes :data:`CONNECTED` and
  :data:`BLOCKED`, one-cycle answers that travel against a closed transmission.
"""

from __future__ import annotations

from ..params import Contract, Param, check_int_range
from .lfsr import derive_seed

__all__ = [
    "RN1",
    "CHANNELS",
    "DATA_BITS",
    "WORD_BITS",
    "DIRECTIONS",
    "DROP",
    "TURN",
    "CONNECTED",
    "BLOCKED",
    "STATUS",
    "IDLE_WORD",
    "MODES",
    "RUNTIME",
    "ROUTER_MODES",
    "PRIORITIES",
    "LFSR_WIDTH",
    "LFSR_STEPS",
    "check_mode",
    "check_router_mode",
    "check_priority",
    "arbitration_groups",
    "routing_mode",
    "circuit_pairs",
    "word",
    "ctrl_of",
    "data_of",
    "direction",
    "pass_head",
    "head_for",
    "dilation",
    "outputs_for",
    "router_seed",
]

#: Input channels and output channels of one RN1.
CHANNELS = 8
#: Data bits of a channel word (the ninth bit is ``ctrl``).
DATA_BITS = 8
WORD_BITS = DATA_BITS + 1
#: Logical directions of the crossbar (radix 4).
DIRECTIONS = 4

#: Codes of ``ctrl = 0`` words. DROP (also the idle word) closing a transmission ends the
#: connection; TURN closing it reverses the connection; CONNECTED and BLOCKED are statuses.
DROP, TURN, CONNECTED, BLOCKED = 0, 1, 2, 3
STATUS = (CONNECTED, BLOCKED)
#: What an idle link carries.
IDLE_WORD = 0

#: ``primary``: one radix-4 crossbar of dilation 2 (all eight inputs equivalent, direction
#: ``d`` on outputs ``2d`` and ``2d + 1``). ``alternate``: two radix-4 crossbars of dilation 1
#: (inputs ``0..3`` to outputs ``0..3``, inputs ``4..7`` to outputs ``4..7``, direction ``d``
#: on output ``4c + d`` of crossbar ``c``).
MODES = ("primary", "alternate")
#: A router built with ``mode="runtime"`` has a one-bit configuration input, ``alternate``,
#: that picks one of :data:`MODES` cycle by cycle: the heads that arrive in a cycle are
#: routed by the mode the input names in that cycle (0 primary, 1 alternate); circuits
#: already held are not touched by a change (their circuit bits serve every input-output
#: pair of either mode). Networks wire their routers in one of :data:`MODES`.
RUNTIME = "runtime"
ROUTER_MODES = (*MODES, RUNTIME)

#: How the requests for one direction (of one crossbar) are ranked when more arrive in one
#: cycle than there are free outputs. ``fixed``: input order, lowest first (the cheapest; a
#: sender on a high input loses every round in which lower ones ask for its direction, so
#: under round retries it waits as long as they have messages: docs/dehon.md, "Routing").
#: ``round-robin``: input order starting at a pointer per group, which moves to one past the
#: last input granted in a cycle the group granted any: a requester is passed over at most
#: once by each other input of its group.
PRIORITIES = ("fixed", "round-robin")

#: The router's random bits come from a 16-bit Fibonacci LFSR (default taps) advanced
#: :data:`LFSR_STEPS` single steps per clock: bit ``d`` of the state is direction ``d``'s
#: fresh random bit in every cycle.
LFSR_WIDTH = 16
LFSR_STEPS = DIRECTIONS


def check_mode(mode) -> str:
    """``"primary"`` or ``"alternate"``, or ``ValueError`` naming the bad value."""
    if mode not in MODES:
        raise ValueError(f"mode must be 'primary' or 'alternate', not {mode!r}")
    return mode


def check_router_mode(mode) -> str:
    """A router's or its model's ``mode``: one of :data:`MODES` or ``"runtime"``."""
    if mode not in ROUTER_MODES:
        raise ValueError(f"mode must be 'primary', 'alternate' or 'runtime', not {mode!r}")
    return mode


def check_priority(priority) -> str:
    """``"fixed"`` or ``"round-robin"``, or ``ValueError`` naming the bad value."""
    if priority not in PRIORITIES:
        raise ValueError(f"priority must be 'fixed' or 'round-robin', not {priority!r}")
    return priority


def arbitration_groups(mode: str) -> list[tuple[tuple, tuple[int, ...], tuple[int, ...]]]:
    """The arbitration groups of a fixed ``mode``: ``(key, inputs, outputs)``, the inputs in
    their fixed-priority order; each group's requests compete for its outputs alone. Primary
    mode: one group per direction (every input, outputs ``2d, 2d + 1``); alternate mode: one
    per crossbar and direction (its four inputs, output ``4c + d``)."""
    if check_mode(mode) == "primary":
        return [
            (("primary", d), tuple(range(CHANNELS)), (2 * d, 2 * d + 1)) for d in range(DIRECTIONS)
        ]
    return [
        (("alternate", c, d), tuple(range(DIRECTIONS * c, DIRECTIONS * (c + 1))), (4 * c + d,))
        for c in range(CHANNELS // DIRECTIONS)
        for d in range(DIRECTIONS)
    ]


def routing_mode(mode: str, alternate: int) -> str:
    """The fixed mode by which a router built in ``mode`` routes a head that arrives while
    its ``alternate`` input is ``alternate`` (a fixed mode ignores the input)."""
    if check_router_mode(mode) != RUNTIME:
        return mode
    return MODES[check_int_range("alternate", alternate, 0, 1)]


def circuit_pairs(mode: str) -> set[tuple[int, int]]:
    """The (input, output) pairs a circuit of a router built in ``mode`` can join: those of
    :func:`outputs_for` in a fixed mode, the union of both in the run-time mode (every pair:
    the primary mode's)."""
    modes = MODES if check_router_mode(mode) == RUNTIME else (mode,)
    return {
        (i, o)
        for m in modes
        for i in range(CHANNELS)
        for d in range(DIRECTIONS)
        for o in outputs_for(m, i, d)
    }


def word(ctrl: int, data: int) -> int:
    """The nine-bit channel word of ``ctrl`` and ``data``."""
    return (data & 0xFF) | (ctrl & 1) << DATA_BITS


def ctrl_of(w: int) -> int:
    return (w >> DATA_BITS) & 1


def data_of(w: int) -> int:
    return w & 0xFF


def direction(head: int) -> int:
    """The direction a head byte asks for: its two low bits."""
    return head & 0b11


def pass_head(head: int) -> int:
    """The head byte as the router passes it on: rotated right by two bits, so the next
    router finds its direction in the two low bits. After four routers the byte is back to
    what the sender sent (one byte routes four stages: 256 endpoints of a bidelta network)."""
    return ((head >> 2) | (head << 6)) & 0xFF


def head_for(directions, fill: int = 0) -> int:
    """The head byte that sends a transmission through ``directions`` (at most four, the
    first router's first); the bits of stages not used are taken from ``fill``."""
    directions = list(directions)
    if len(directions) > 4:
        raise ValueError(f"one head byte names at most four directions, not {len(directions)}")
    head = fill & 0xFF
    for k, d in enumerate(directions):
        check_int_range("direction", d, 0, DIRECTIONS - 1)
        head = (head & ~(0b11 << 2 * k)) | d << 2 * k
    return head


def dilation(mode: str) -> int:
    """Physical outputs per logical direction: 2 in the primary mode, 1 in the alternate."""
    return 2 if check_mode(mode) == "primary" else 1


def outputs_for(mode: str, inp: int, d: int) -> tuple[int, ...]:
    """The outputs that serve direction ``d`` for a transmission on input ``inp``."""
    check_int_range("direction", d, 0, DIRECTIONS - 1)
    if check_mode(mode) == "primary":
        return (2 * d, 2 * d + 1)
    return (DIRECTIONS * (inp // DIRECTIONS) + d,)


def router_seed(seed: int, stage: int, index: int) -> int:
    """LFSR seed (never 0) of router ``index`` of ``stage`` in a network seeded ``seed``."""
    return derive_seed(LFSR_WIDTH, seed, stage, index)


#: The RN1 router's parameters: the design table's, and what ``RN1Router`` and ``RN1Model``
#: check.
RN1 = Contract(
    "rn1",
    (
        Param(
            "mode",
            "primary",
            "primary (radix-4 crossbar, dilation 2), alternate (two 4x4 crossbars) or "
            "runtime (either, by the 1-bit input 'alternate')",
            choices=ROUTER_MODES,
            value=check_router_mode,
        ),
        Param("seed", 1, "seed of the router's LFSR", lo=1, hi=(1 << LFSR_WIDTH) - 1),
        Param(
            "priority",
            "fixed",
            "ranking of requests for one direction: fixed (input order) or round-robin",
            choices=PRIORITIES,
            value=check_priority,
        ),
    ),
)
