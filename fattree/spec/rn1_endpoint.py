"""The RN1 endpoint interface as data: what :class:`fattree.hdl.rn1.endpoint.RN1Endpoint` and
its reference model :class:`fattree.sim.models.rn1_endpoint.RN1EndpointModel` agree on.

* The user's streams, one beat per byte, framed by ``last``: a transmit beat is ``data`` (8
  bits, low), ``dest`` (the destination endpoint, read on a frame's first beat), ``last``; a
  receive beat is ``data``, ``last`` (:func:`tx_fields`, :func:`rx_fields`; packed low bits
  first as :func:`fattree.spec.bits.pack_fields` does).
* The head byte for a destination, by the network's **route rule** (:data:`ROUTES`, given at
  construction; :func:`route_heads` tabulates it per destination):

  - ``"bidelta"``: the bidelta network's (:meth:`Bidelta.head`, unused stage bits 0), a fixed
    permutation of the destination's bits (:func:`head_bits`), the same from every endpoint;
  - ``"unit-tree"``: the one-stage fat-tree of DeHon's 2-wide unit tree (64 processing
    nodes), where the head depends on the sender too (:func:`unit_tree_head`): the up
    router's crossover ``L - 1`` for the level ``L`` of the lowest node holding both, then the
    destination's base-4 digits ``L - 1 .. 0`` (:meth:`UnitTree.route`).
* The retry strategies and the back-off of the circuit tree's network interface
  (:data:`fattree.spec.circuit.RETRY`, ``BACKOFF_SLOT``, ``BACKOFF_CAP``): after the ``k``-th
  BLOCKED in a row, ``BACKOFF_SLOT * (x mod 2^min(k, BACKOFF_CAP))`` cycles, ``x`` the low
  bits of the endpoint's 16-bit LFSR (:func:`backoff_cycles`), seeded per endpoint by
  :func:`endpoint_seed`.
* Counters (``sent``, ``retries``, ``received``, ``dropped``, ``timeouts``) of
  :data:`COUNTER_BITS` bits that stop at their largest value.
* The **status timeout**: an attempt whose status has not come after ``timeout`` cycles of
  waiting (default :data:`TIMEOUT`) is given up as if BLOCKED (counted in ``timeouts``, not
  in ``retries``); after :data:`GIVE_UP` timeouts in a row the message is dropped (counted in
  ``dropped``). In a working network the status comes :func:`status_cycles` cycles after the
  last byte at the latest, so a timeout never fires there (:func:`check_timeout`).

The protocol and the choices are in docs/dehon.md, section "Endpoints".
"""

from __future__ import annotations

from ..params import Contract, Param, check_int_range
from .circuit import BACKOFF_CAP, BACKOFF_SLOT, RETRY, RETRY_CODES, check_retry
from .lfsr import derive_seed
from .rn1 import head_for
from .rn1_bidelta import RN1_BIDELTA, Bidelta, check_endpoints
from .rn1_tree import SUBTREES, UnitTree

__all__ = [
    "RN1_BIDELTA_STREAM",
    "RN1_FAT_TREE",
    "RETRY",
    "BACKOFF_CAP",
    "BACKOFF_SLOT",
    "COUNTER_BITS",
    "LFSR_WIDTH",
    "MAX_BYTES",
    "ROUTES",
    "check_retry",
    "check_route",
    "check_max_bytes",
    "tx_fields",
    "rx_fields",
    "dest_bits",
    "head",
    "head_bits",
    "unit_tree_head",
    "route_heads",
    "endpoint_seed",
    "backoff_cycles",
    "TIMEOUT",
    "MAX_TIMEOUT",
    "GIVE_UP",
    "status_cycles",
    "check_timeout",
    "check_dead_outputs",
    "path_routers",
]

#: Width of each counter; it stops at its largest value.
COUNTER_BITS = 16
#: The back-off LFSR (16 bits, default taps, one step per clock).
LFSR_WIDTH = 16
#: Largest ``max_bytes`` (payload bytes per message) the definitions accept.
MAX_BYTES = 64
#: Route rules: how an endpoint makes the head byte for a destination.
ROUTES = ("bidelta", "unit-tree")
#: Cycles an endpoint waits for a status before it gives the attempt up (the default; the
#: longest wait of a working network here is 11 cycles: 256-endpoint bidelta, 2 * 4 + 3).
TIMEOUT = 32
#: Largest ``timeout`` the definitions accept.
MAX_TIMEOUT = 1024
#: Timeouts in a row after which a message is dropped: each output tried twice.
GIVE_UP = 4
#: First part of an endpoint's seed path: routers use ``(stage, index)`` with small stages.
_SEED_TAG = 0xE9


def check_max_bytes(max_bytes) -> int:
    return check_int_range("max_bytes", max_bytes, 1, MAX_BYTES)


def check_route(route) -> str:
    if not isinstance(route, str) or route not in ROUTES:
        raise ValueError(f"route must be one of {', '.join(ROUTES)}, not {route!r}")
    return route


def dest_bits(endpoints: int) -> int:
    """Bits of a destination: ``lg endpoints``."""
    return check_endpoints(endpoints).bit_length() - 1


def tx_fields(endpoints: int) -> dict[str, int]:
    """Fields of a transmit beat, low bits first: ``data``, ``dest``, ``last``."""
    return {"data": 8, "dest": dest_bits(endpoints), "last": 1}


def rx_fields() -> dict[str, int]:
    """Fields of a receive beat, low bits first: ``data``, ``last``."""
    return {"data": 8, "last": 1}


def _net(endpoints: int) -> Bidelta:
    n = check_endpoints(endpoints)
    return Bidelta(n, 0, (n.bit_length() - 1) // 2)  # heads do not depend on the wiring


def head(endpoints: int, dest: int) -> int:
    """The head byte an endpoint sends to reach ``dest`` (stage bits not used are 0)."""
    check_int_range("dest", dest, 0, endpoints - 1)
    return _net(endpoints).head(dest)


def head_bits(endpoints: int) -> list[int | None]:
    """For each bit of the head byte (bit 0 first), the bit of the destination it carries,
    or None (always 0): the head is a permutation of the destination's bits."""
    net = _net(endpoints)
    bits: list[int | None] = [None] * 8
    for b in range(dest_bits(endpoints)):
        h = net.head(1 << b)
        if h == 0 or h & (h - 1):
            raise AssertionError(f"head of destination bit {b} is {h:#x}, not one bit")
        bits[h.bit_length() - 1] = b
    return bits


def unit_tree_head(node: int, dest: int) -> int:
    """The head byte from processing node ``node`` to ``dest`` in the one-stage fat-tree (the
    2-wide unit tree, 64 nodes): :meth:`UnitTree.route`'s directions, stages not used 0. To
    itself (which :meth:`UnitTree.route` does not take): out through its up router's level-1
    crossover and back down, ``[0, dest mod 4]``, as to a sibling of the same level-1 node."""
    check_int_range("node", node, 0, SUBTREES - 1)
    check_int_range("dest", dest, 0, SUBTREES - 1)
    directions = [0, dest & 3] if node == dest else UnitTree.route(node, dest)
    return head_for(directions)


def route_heads(route: str, endpoints: int, node: int = 0) -> list[int]:
    """The head byte endpoint ``node`` sends for each destination ``0 .. endpoints - 1`` under
    the route rule ``route`` (:data:`ROUTES`); ``"unit-tree"`` takes 64 endpoints only."""
    route = check_route(route)
    n = check_endpoints(endpoints)
    check_int_range("node", node, 0, n - 1)
    if route == "bidelta":
        net = _net(n)
        return [net.head(d) for d in range(n)]
    if n != SUBTREES:
        raise ValueError(f"endpoints must be {SUBTREES} for route 'unit-tree', not {n}")
    return [unit_tree_head(node, d) for d in range(n)]


def endpoint_seed(seed: int, endpoint: int) -> int:
    """LFSR seed (never 0) of endpoint ``endpoint`` of a network seeded ``seed``."""
    return derive_seed(LFSR_WIDTH, seed, _SEED_TAG, endpoint)


def backoff_cycles(blocked: int, x: int) -> int:
    """Cycles to wait after the ``blocked``-th BLOCKED status in a row (``>= 1``), ``x`` the
    LFSR's value in the cycle the status arrives."""
    check_int_range("blocked", blocked, 1)
    return BACKOFF_SLOT * (x & ((1 << min(blocked, BACKOFF_CAP)) - 1))


def status_cycles(routers: int) -> int:
    """Cycles of waiting, from the cycle after the last byte is sent, until the status comes
    at the latest, over a path of ``routers`` routers: the close and the status cross each
    router in one cycle each way, plus the close's cycle out of the endpoint, the
    destination's answer and the cycle the status is read in."""
    check_int_range("routers", routers, 1)
    return 2 * routers + 3


def path_routers(route: str, endpoints: int) -> int:
    """Routers on the longest path of the network of route rule ``route``: the bidelta's
    stages (``log4 endpoints``); the unit tree's up router and three down layers."""
    route = check_route(route)
    return dest_bits(endpoints) // 2 if route == "bidelta" else 4


def check_timeout(timeout, routers: int | None = None) -> int:
    """``timeout`` is an integer in ``1 .. MAX_TIMEOUT`` and, for a network whose paths cross
    ``routers`` routers at most, at least :func:`status_cycles` of them: shorter, a working
    connection would be given up while its status is on the way."""
    timeout = check_int_range("timeout", timeout, 1, MAX_TIMEOUT)
    if routers is not None and timeout < status_cycles(routers):
        raise ValueError(
            f"timeout must be at least {status_cycles(routers)} (the longest wait for a "
            f"status in this network), not {timeout}"
        )
    return timeout


def check_dead_outputs(dead_outputs, endpoints: int) -> tuple[int, ...]:
    """Endpoint output channels cut from the network (a fault: the link carries nothing
    either way), as a sorted tuple of distinct channel numbers ``2 * endpoint + link``."""
    if isinstance(dead_outputs, str) or not isinstance(dead_outputs, list | tuple | set):
        raise TypeError(f"dead_outputs must be a list of channels, not {dead_outputs!r}")
    top = 2 * check_endpoints(endpoints) - 1
    return tuple(sorted({check_int_range("dead_outputs", c, 0, top) for c in dead_outputs}))


#: How an endpoint retries after BLOCKED.
_RETRY = Param(
    "retry",
    "immediate",
    "after BLOCKED: immediate, round (all at once when none is in flight) or "
    "backoff (random exponential); 0, 1, 2 name them too",
    choices=RETRY,
    aliases=RETRY_CODES,
    value=check_retry,
)
_MAX_BYTES = Param("max_bytes", 8, "payload bytes per message at most", lo=1, hi=MAX_BYTES)

#: The bidelta network with an endpoint per node: the design table's parameters, and what
#: ``RN1BideltaStream`` and ``RN1BideltaStreamModel`` check.
RN1_BIDELTA_STREAM = Contract(
    "rn1-bidelta-stream",
    (
        RN1_BIDELTA["endpoints"],
        Param("seed", 1, "seed of the wiring and of every LFSR", lo=0),
        _RETRY,
        _MAX_BYTES,
        # Also at least the longest wait for a status in the network (check_timeout).
        Param(
            "timeout",
            TIMEOUT,
            "cycles an endpoint waits for a status before it gives the attempt up "
            "(at least 2 * stages + 3; docs/dehon.md, Endpoints)",
            lo=1,
            hi=MAX_TIMEOUT,
        ),
    ),
)

#: DeHon's 64-node fat-tree with an endpoint per node: ``RN1FatTreeStream``,
#: ``RN1FatTreeStreamModel``.
RN1_FAT_TREE = Contract(
    "rn1-fat-tree",
    (Param("seed", 1, "seed of the routers' and endpoints' LFSRs", lo=0), _RETRY, _MAX_BYTES),
)
