"""Self-test of the fast circuit tree (``circuit-tree``): the circuit tree's self-test
(:mod:`fattree.boards.circuit_selftest`: on-chip LFSR or pattern traffic, payloads with
source, destination, sequence number and check code, an independent checker, the model's
delivery trace replayed from block RAM cycle for cycle) around a
:class:`~fattree.hdl.circuit_fast.tree.CircuitFastTree`, replaying
:class:`~fattree.sim.models.circuit_fast.CircuitFastTreeModel`'s trace.

What differs from the paper tree's run: each node keeps up to ``window`` messages in flight,
so a source may offer its next message while earlier ones are on their way; ``rejects``
counts the rejected attempts (``tx_reject``, each sent again); ``tx_done`` pulses once per
message delivered, so the numbers sent, acknowledged and delivered still agree at the end of
a run. ``maxlat`` is the longest any node waited, with messages in flight, for its next
``tx_done``.
"""

from __future__ import annotations

from ..hdl._validation import validates_parameters
from ..hdl.circuit_fast.tree import CircuitFastTree
from ..sim.models.circuit_fast import CircuitFastTreeModel
from ..spec.circuit_fast import CIRCUIT_TREE_FAST
from .circuit_selftest import SourcesTwin, StreamTreeHarness, run_model
from .selftest import RunTrace, SelfTestCore

__all__ = ["CircuitFastTreeHarness", "expected_fast_run", "circuit_tree_fast_selftest"]


def expected_fast_run(
    leaves,
    width,
    length,
    seed,
    window,
    *,
    traffic_seed=1,
    pattern="random",
    inject_cycles=1000,
    latency_bits=12,
    limit=1_000_000,
) -> RunTrace:
    """The fast tree's run: :func:`~fattree.boards.circuit_selftest.run_model` on
    :class:`~fattree.sim.models.circuit_fast.CircuitFastTreeModel`."""
    model = CircuitFastTreeModel(leaves, width, length, seed, window)
    sources = SourcesTwin(
        leaves, width, length, seed=traffic_seed, pattern=pattern, inject_cycles=inject_cycles
    )
    return run_model(model, sources, latency_bits=latency_bits, limit=limit)


class CircuitFastTreeHarness(StreamTreeHarness):
    """The self-test run of the fast tree: sources, a
    :class:`~fattree.hdl.circuit_fast.tree.CircuitFastTree`, checker and replay memory.

    Parameters
    ----------
    leaves, width, length, seed, window
        The network's parameters (as :data:`~fattree.spec.circuit_fast.CIRCUIT_TREE_FAST`).
    traffic_seed, pattern, inject_cycles, latency_bits
        As :class:`~fattree.boards.circuit_selftest.CircuitTreeHarness`.
    network : callable, optional
        ``network(leaves, width, length, seed, window)`` builds the network under test;
        tests pass broken ones.
    """

    design = "circuit-tree"

    @validates_parameters
    def __init__(
        self,
        leaves=16,
        width=8,
        length=2,
        seed=1,
        window=8,
        *,
        traffic_seed=1,
        pattern="random",
        inject_cycles=1000,
        latency_bits=12,
        network=None,
    ):
        self.leaves = CIRCUIT_TREE_FAST.check("leaves", leaves)
        self.width = CIRCUIT_TREE_FAST.check("width", width)
        self.length = CIRCUIT_TREE_FAST.check("length", length)
        self.seed = CIRCUIT_TREE_FAST.check("seed", seed)
        self.window = CIRCUIT_TREE_FAST.check("window", window)
        self.network = network or CircuitFastTree
        self._setup(
            lambda: self.network(leaves, width, length, seed, window),
            CircuitFastTreeModel(leaves, width, length, seed, window),
            window=window,
            traffic_seed=traffic_seed,
            pattern=pattern,
            inject_cycles=inject_cycles,
            latency_bits=latency_bits,
        )


def circuit_tree_fast_selftest(
    params: dict, *, seed=1, blink_log2=22, fault_log2=None, **options
) -> SelfTestCore:
    """The board self-test core of the fast circuit tree: the design's parameters
    (``leaves``, ``width``, ``length``, ``seed``, ``window``), ``seed`` the traffic's seed,
    ``options`` the harness's (``pattern``, ``inject_cycles``, ...)."""
    params = dict(params)
    if params.pop("faults", ""):
        # The replayed trace is the fault-free model's; a faulty tree is checked by fattree sim.
        raise ValueError(
            "the circuit-tree self-test runs the fault-free tree; faults (--param faults) "
            "are for fattree sim and verilog (--inject-fault corrupts a checked bit instead)"
        )
    harness = CircuitFastTreeHarness(**params, traffic_seed=seed, **options)
    return SelfTestCore(harness, blink_log2=blink_log2, fault_log2=fault_log2)
