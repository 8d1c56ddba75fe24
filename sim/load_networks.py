"""The networks with stream endpoints, as :mod:`fattree.sim.network_load` drives them.

Each :class:`LoadNetwork` is one design at one size and message length: its design
parameters, how its streams carry a message (``word_bits`` per ``tx`` beat, ``beats`` per
message; the ``tx`` and ``rx`` payload fields of its definitions) and its cycle-exact model
behind one calling convention, ``cycle(tx, rx_ready) -> (tx_ready, rx)`` (the outputs of this
cycle, then the clock edge with these inputs). The RTL is driven through the same fields by
:mod:`fattree.sim.benches.network_load`.

| network | message of ``length`` words | links |
|---|---|---|
| ``circuit-tree-paper``, ``circuit-tree`` | one beat of ``8 * length`` bits | 8 data wires |
| ``rn1-bidelta-stream``, ``rn1-fat-tree`` | ``length`` byte beats | 9 wires each way |
| ``hypercube`` | one beat of ``8 * length`` bits | a whole message wide |
| ``leiserson-online`` | one beat of ``8 * length`` bits | bit-serial |
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..spec import circuit, hypercube, leiserson_online, rn1_endpoint
from ..spec.capacities import TreeLayout
from .models.circuit import CircuitTreeModel
from .models.circuit_fast import CircuitFastTreeModel
from .models.hypercube import HypercubeModel
from .models.leiserson_online import LeisersonOnlineModel
from .models.rn1_endpoint import RN1BideltaStreamModel, RN1FatTreeStreamModel

__all__ = ["WORD_BITS", "LoadNetwork", "NETWORKS", "load_network", "lengths_of"]

#: Data bits per word: the links' width the networks are compared at.
WORD_BITS = 8


@dataclass(frozen=True)
class LoadNetwork:
    """One network under load: ``design`` with ``params``, ``nodes`` stream endpoints,
    messages of ``length`` words of :data:`WORD_BITS` carried as ``beats`` beats of
    ``word_bits``."""

    name: str
    design: str
    nodes: int
    length: int
    params: dict = field(hash=False)
    tx_fields: dict = field(hash=False)
    rx_fields: dict = field(hash=False)
    #: The name of the ``tx`` field that holds the destination.
    dest_field: str = "dest"
    beats: int = 1

    @property
    def word_bits(self) -> int:
        return self.length * WORD_BITS // self.beats

    @property
    def payload_bits(self) -> int:
        """Payload bits of one message."""
        return self.length * WORD_BITS

    def model(self):
        """A fresh cycle-exact model, from reset, behind ``cycle(tx, rx_ready)``."""
        return _MODELS[self.design](self)


class _MessageModel:
    """A model whose ``step(valid, dest, data, ready)`` returns this cycle's outputs with
    ``tx_ready``, ``rx_valid``, ``rx_data`` (the circuit tree, the hypercube)."""

    def __init__(self, model):
        self.model = model

    def cycle(self, tx, ready):
        valid = [int(b is not None) for b in tx]
        dest = [b[0] if b else 0 for b in tx]
        data = [b[1] if b else 0 for b in tx]
        out = self.model.step(valid, dest, data, ready)
        rx = [(d, 1) if v else None for v, d in zip(out.rx_valid, out.rx_data, strict=True)]
        return list(out.tx_ready), rx


class _LeisersonModel:
    def __init__(self, model: LeisersonOnlineModel):
        self.model = model

    def cycle(self, tx, ready):
        _, tx_ready, rx, _ = self.model.outputs()
        self.model.tick([(b[0], b[1]) if b else None for b in tx], ready)
        return tx_ready, [(r[1], 1) if r else None for r in rx]


class _RN1Model:
    def __init__(self, model):
        self.model = model

    def cycle(self, tx, ready):
        eps = self.model.endpoints
        tx_ready = [ep.tx_ready for ep in eps]
        rx = [(ep.rx_data, ep.rx_last) if ep.rx_valid else None for ep in eps]
        beats = [(1, b[1], b[0], b[2]) if b else (0, 0, 0, 0) for b in tx]
        self.model.step(beats, ready)
        return tx_ready, rx


_MODELS = {
    "circuit-tree-paper": lambda n: _MessageModel(
        CircuitTreeModel(n.nodes, WORD_BITS, n.length, n.params["seed"], n.params["retry"])
    ),
    "circuit-tree": lambda n: _MessageModel(
        CircuitFastTreeModel(n.nodes, WORD_BITS, n.length, n.params["seed"], n.params["window"])
    ),
    "hypercube": lambda n: _MessageModel(
        HypercubeModel(
            n.params["dim"], n.params["procs"], n.params["buffers"], n.params["data_bits"]
        )
    ),
    "leiserson-online": lambda n: _LeisersonModel(
        LeisersonOnlineModel(
            TreeLayout.universal(n.nodes, None, n.params["seed"]),
            n.params["data_bits"],
            n.params["queue"],
        )
    ),
    "rn1-bidelta-stream": lambda n: _RN1Model(
        RN1BideltaStreamModel(n.nodes, n.params["seed"], n.params["retry"], n.params["max_bytes"])
    ),
    "rn1-fat-tree": lambda n: _RN1Model(
        RN1FatTreeStreamModel(n.params["seed"], n.params["retry"], n.params["max_bytes"])
    ),
}


def _circuit_tree(nodes: int, length: int) -> LoadNetwork:
    params = {"leaves": nodes, "width": WORD_BITS, "length": length, "seed": 1}
    params["retry"] = "immediate"
    return LoadNetwork(
        "circuit-tree-paper",
        "circuit-tree-paper",
        nodes,
        length,
        params,
        circuit.tx_fields(nodes, WORD_BITS, length),
        circuit.rx_fields(WORD_BITS, length),
    )


def _circuit_tree_fast(nodes: int, length: int) -> LoadNetwork:
    params = {"leaves": nodes, "width": WORD_BITS, "length": length, "seed": 1, "window": 8}
    return LoadNetwork(
        "circuit-tree",
        "circuit-tree",
        nodes,
        length,
        params,
        circuit.tx_fields(nodes, WORD_BITS, length),
        circuit.rx_fields(WORD_BITS, length),
    )


def _rn1(design: str, nodes: int, length: int) -> LoadNetwork:
    # The receive buffer holds the longest message; 8 bytes is the design's default.
    params = {"seed": 1, "retry": "immediate", "max_bytes": max(8, length)}
    if design == "rn1-bidelta-stream":
        params["endpoints"] = nodes
    return LoadNetwork(
        design,
        design,
        nodes,
        length,
        params,
        rn1_endpoint.tx_fields(nodes),
        rn1_endpoint.rx_fields(),
        beats=length,
    )


def _hypercube(nodes: int, length: int) -> LoadNetwork:
    dim, bits = nodes.bit_length() - 1, length * WORD_BITS
    params = {"dim": dim, "procs": 1, "buffers": 2, "data_bits": bits}
    return LoadNetwork(
        "hypercube",
        "hypercube",
        nodes,
        length,
        params,
        hypercube.tx_fields(dim, 1, bits),
        hypercube.rx_fields(bits),
    )


def _leiserson(nodes: int, length: int) -> LoadNetwork:
    bits = length * WORD_BITS
    params = {"leaves": nodes, "w": 0, "seed": 0, "data_bits": bits, "queue": 4}
    return LoadNetwork(
        "leiserson-online",
        "leiserson-online",
        nodes,
        length,
        params,
        leiserson_online.tx_fields(nodes, bits),
        leiserson_online.rx_fields(nodes, bits),
        dest_field="dst",
    )


#: The networks whose senders retry a refused message, by one of
#: :data:`fattree.spec.circuit.RETRY`'s strategies (their parameter ``retry``).
RETRY_NETWORKS = ("circuit-tree-paper", "rn1-bidelta-stream", "rn1-fat-tree")

#: Per network: its builder ``(nodes, length) -> LoadNetwork``, the node counts it is built
#: for and the longest message in words (its links or buffers bound it).
NETWORKS = {
    "circuit-tree-paper": (_circuit_tree, (4, 8, 16, 32, 64), 64),
    "circuit-tree": (_circuit_tree_fast, (4, 8, 16, 32, 64), 64),
    "rn1-bidelta-stream": (lambda n, p: _rn1("rn1-bidelta-stream", n, p), (4, 16, 64), 64),
    "rn1-fat-tree": (lambda n, p: _rn1("rn1-fat-tree", n, p), (64,), 64),
    "hypercube": (_hypercube, (4, 8, 16, 32, 64), 8),
    "leiserson-online": (_leiserson, (4, 8, 16, 32, 64), 8),
}


def lengths_of(name: str, lengths) -> list[int]:
    """The message lengths of ``lengths`` that network ``name`` carries."""
    longest = NETWORKS[name][2]
    return [p for p in lengths if p <= longest]


def load_network(name: str, nodes: int, length: int, retry: str = "immediate") -> LoadNetwork:
    """Network ``name`` with ``nodes`` endpoints and messages of ``length`` words (a
    ValueError with a one-line message for a size it is not built for). ``retry`` is the
    retry strategy of the networks that have one (:data:`RETRY_NETWORKS`); the others have
    none and ignore it."""
    if name not in NETWORKS:
        raise ValueError(f"network must be one of {', '.join(NETWORKS)}, not {name!r}")
    build, sizes, longest = NETWORKS[name]
    if nodes not in sizes:
        allowed = ", ".join(map(str, sizes))
        raise ValueError(f"{name} is built for {allowed} endpoints, not {nodes}")
    if not 1 <= length <= longest:
        raise ValueError(f"{name} carries messages of 1..{longest} words, not {length}")
    if retry not in circuit.RETRY:
        raise ValueError(f"retry must be one of {', '.join(circuit.RETRY)}, not {retry!r}")
    net = build(nodes, length)
    if name in RETRY_NETWORKS:
        net.params["retry"] = retry
    return net
