"""The Connection Machine's hypercube router as data (Stanfill 1987, section 4.2).

What the router hardware (:mod:`fattree.hdl.hypercube`) and its reference model
(:mod:`fattree.sim.models.hypercube`) agree on: the parameters and their ranges, how nodes,
wires and processors are numbered, the relative address, and the fields of a message on a
link and of the processors' stream beats. The behaviour (who wins a wire, when a message is
buffered or referred) is written down in docs/hypercube.md and restated by each side.

Numbering: ``2^dim`` nodes, node ``n``'s wire ``i`` joins it to node ``n XOR 2^i`` (wire ``i``
is dimension ``i``, bit ``i`` of the address). Each node has ``procs`` processors; processor
``g`` of the network is processor ``g mod procs`` of node ``g div procs`` (the node number in
the high bits of ``g``).

A message on a link carries its *relative address* (``src node XOR dst node`` when it is
injected; sending it over wire ``i`` inverts bit ``i``), the destination processor within
the node and the data: no source, no age (docs/hypercube.md says why).
"""

from __future__ import annotations

from ..params import Contract, Param

__all__ = [
    "HYPERCUBE",
    "MAX_DIM",
    "MAX_RTL_DIM",
    "MAX_PROCS",
    "MAX_BUFFERS",
    "INJECT_DEPTH",
    "RECEIVE_DEPTH",
    "check_hypercube",
    "proc_bits",
    "neighbour",
    "relative_address",
    "split_dest",
    "tx_fields",
    "rx_fields",
    "link_fields",
]

#: Largest dimension the model takes (the Connection Machine has 12).
MAX_DIM = 16
#: Largest dimension the hardware is built for (64 nodes).
MAX_RTL_DIM = 6
#: Most processors per node (the Connection Machine has 16).
MAX_PROCS = 16
#: Most buffer slots per node.
MAX_BUFFERS = 16
#: Messages each processor's injection queue holds (``tx.ready`` while it has room).
INJECT_DEPTH = 2
#: Entries of a processor's receive queue: the rx register and one behind it, so a
#: decision may deliver to a receiver whose readiness in the send cycle it cannot know.
RECEIVE_DEPTH = 2


#: The hypercube's parameters: the design table's, and what ``HypercubeNetwork`` and
#: ``HypercubeModel`` check.
HYPERCUBE = Contract(
    "hypercube",
    (
        # The hardware is built up to 64 nodes; the model runs larger cubes.
        Param(
            "dim",
            4,
            "dimension k of the cube (2^k nodes)",
            lo=1,
            hi=MAX_RTL_DIM,
            model_limit=MAX_DIM,
        ),
        Param(
            "procs",
            2,
            "processors per node (a power of two)",
            lo=1,
            hi=MAX_PROCS,
            power_of_two=True,
        ),
        Param("buffers", 2, "buffer slots per node", lo=0, hi=MAX_BUFFERS),
        Param("data_bits", 8, "data bits per message", lo=1, hi=64),
    ),
)


def check_hypercube(dim, procs, buffers, data_bits, *, model: bool = True) -> tuple:
    """Validate the parameters (:data:`HYPERCUBE`; the model's range, or with ``model=False``
    the hardware's); return them as ``(dim, procs, buffers, data_bits)``."""
    values = {"dim": dim, "procs": procs, "buffers": buffers, "data_bits": data_bits}
    return tuple(HYPERCUBE.check(name, value, model=model) for name, value in values.items())


def proc_bits(procs: int) -> int:
    """Bits of a processor number within a node (0 for one processor per node)."""
    return procs.bit_length() - 1


def neighbour(node: int, wire: int) -> int:
    """The node at the other end of ``node``'s wire ``wire``."""
    return node ^ (1 << wire)


def relative_address(src_node: int, dst_node: int) -> int:
    """Bit ``i`` set: the message still has to cross dimension ``i``."""
    return src_node ^ dst_node


def split_dest(dest: int, procs: int) -> tuple[int, int]:
    """A network processor number -> ``(node, processor within the node)``."""
    return dest >> proc_bits(procs), dest & (procs - 1)


def tx_fields(dim: int, procs: int, data_bits: int) -> dict[str, int]:
    """Fields of a processor's transmit beat, low bits first: ``dest`` (the network processor
    number, ``dim + lg procs`` bits), then ``data``. One beat is one whole message."""
    return {"dest": dim + proc_bits(procs), "data": data_bits}


def rx_fields(data_bits: int) -> dict[str, int]:
    """Fields of a processor's receive beat: the message's ``data``."""
    return {"data": data_bits}


def link_fields(dim: int, procs: int, data_bits: int) -> dict[str, int]:
    """Fields of a message on a link or in a buffer slot, low bits first: ``valid``, ``rel``
    (the relative address), ``proc`` (the processor within the destination node), ``data``."""
    return {"valid": 1, "rel": dim, "proc": proc_bits(procs), "data": data_bits}
