"""The circuit-switched fat tree's protocol as data (Strumpen and Krishnamurthy 2005).

What the routers, the network interfaces and their reference model agree on: port numbers,
the route words of a message, the retry strategies and their codes, the back-off constants,
how every router's and interface's LFSR is seeded, and the fields of the interfaces' stream
payloads. The protocol itself (timing, who answers what) is in docs/circuit_tree.md.
"""

from __future__ import annotations

from ..params import UNBOUNDED, Contract, Param
from .bits import pack_fields, unpack_fields
from .faults import canonical_faults
from .lfsr import derive_seed, xor_mask

__all__ = [
    "A",
    "B",
    "C",
    "D",
    "PORTS",
    "LFSR_WIDTH",
    "SHARED_SEED",
    "RETRY",
    "RETRY_CODES",
    "BACKOFF_CAP",
    "BACKOFF_SLOT",
    "check_retry",
    "CIRCUIT_TREE",
    "CIRCUIT_ROUTER",
    "route_bits",
    "router_seed",
    "lfsr_mask",
    "tx_fields",
    "rx_fields",
    "pack_fields",
    "unpack_fields",
]

#: Router ports: ``a``, ``b`` down (left and right subtree), ``c``, ``d`` up.
A, B, C, D = 0, 1, 2, 3
PORTS = "abcd"

#: Every router and interface draws its random bits from a 16-bit LFSR (default taps).
LFSR_WIDTH = 16
#: Seed of the one LFSR that routers built with ``shared_lfsr`` read.
SHARED_SEED = 1

#: Retry strategies, by name; the index is the integer code components and models also take.
RETRY = ("immediate", "round", "backoff")
#: The codes as the command line's aliases of the names (``--param retry=2`` is ``backoff``).
RETRY_CODES = tuple((str(code), name) for code, name in enumerate(RETRY))
#: Binary exponential back-off: after the k-th reject in a row wait
#: ``BACKOFF_SLOT * (x mod 2^min(k, BACKOFF_CAP))`` cycles, x from the interface's LFSR.
BACKOFF_CAP = 8
BACKOFF_SLOT = 4


def check_retry(retry) -> str:
    """``"immediate"``/``"round"``/``"backoff"`` or their codes 0/1/2 -> the name."""
    if isinstance(retry, int) and not isinstance(retry, bool) and 0 <= retry < len(RETRY):
        return RETRY[retry]
    if retry in RETRY:
        return retry
    raise ValueError(
        f"retry must be one of 'immediate', 'round', 'backoff' (or 0, 1, 2), not {retry!r}"
    )


def route_bits(node: int, dest: int) -> list[int]:
    """Bit 0 of each route word of a message from ``node`` to ``dest`` (``node != dest``):
    ``L`` zeros up, a one to turn at level ``L``, then the destination bits ``L-1 .. 0``."""
    level = (node ^ dest).bit_length() - 1
    return [0] * level + [1] + [(dest >> v) & 1 for v in reversed(range(level))]


def router_seed(seed: int, level: int, switch: int) -> int:
    """LFSR seed of router ``SW(level, switch)`` for a network seed (never 0)."""
    return derive_seed(LFSR_WIDTH, seed, level, switch)


def lfsr_mask(seed: int) -> int:
    """The bits of the shared LFSR (seed :data:`SHARED_SEED`) whose XOR is, in every cycle,
    bit 0 of a router LFSR seeded with ``seed`` (see :func:`fattree.spec.lfsr.xor_mask`)."""
    return xor_mask(LFSR_WIDTH, SHARED_SEED, seed)


def tx_fields(leaves: int, width: int, length: int) -> dict[str, int]:
    """Fields of a transmit stream beat, low bits first: ``dest`` (``lg leaves`` bits), then
    ``data`` (the ``length`` words of ``width`` bits, word 0 in the low bits). One beat is one
    whole message."""
    return {"dest": leaves.bit_length() - 1, "data": width * length}


def rx_fields(width: int, length: int) -> dict[str, int]:
    """Fields of a receive stream beat: ``data``, the whole message (word 0 in the low bits)."""
    return {"data": width * length}


#: The circuit tree's parameters: the design table's, and what ``CircuitFatTree`` and
#: ``CircuitTreeModel`` check.
CIRCUIT_TREE = Contract(
    "circuit-tree-paper",
    (
        # The hardware stops at 1024 leaves; the model runs the experiments' larger trees.
        Param(
            "leaves",
            16,
            "processing nodes (a power of two)",
            lo=2,
            hi=1024,
            power_of_two=True,
            model_limit=UNBOUNDED,
        ),
        Param("width", 8, "data wires per link direction (1 = bit-serial)", lo=1, hi=64),
        Param("length", 2, "data words per message", lo=1, hi=64),
        Param("seed", 1, "seed of the routers' and interfaces' LFSRs", lo=0),
        Param(
            "retry",
            "immediate",
            "after a reject: immediate, round (all at once when none is in flight) or "
            "backoff (random exponential); 0, 1, 2 name them too",
            choices=RETRY,
            aliases=RETRY_CODES,
            value=check_retry,
        ),
        # Checked against the network it is in (fattree.spec.faults.check_faults).
        Param(
            "faults",
            "",
            "dead links/routers, stuck wires: up:L.T.P,down:L.T.P,inject:N,eject:N,"
            "router:L.T, a link with /WIRE=0|1 (docs/circuit_tree.md, Faults)",
            text=canonical_faults,
        ),
    ),
)

#: One router of the circuit tree (its cost per router): ``CircuitRouter``, ``RouterModel``.
CIRCUIT_ROUTER = Contract(
    "circuit-router",
    (
        # 64 as the tree's links; a router alone (proofs, tests) takes any width.
        Param(
            "width",
            8,
            "data wires per link direction (1 = bit-serial)",
            lo=1,
            hi=64,
            limit=UNBOUNDED,
        ),
        Param("seed", 1, "seed of the router's LFSR", lo=1, hi=(1 << LFSR_WIDTH) - 1),
    ),
)
