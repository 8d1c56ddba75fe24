"""The fast circuit tree (``circuit-tree-fast``, :mod:`fattree.spec.circuit_fast`) as one
component: the routers of :mod:`.router`, an interface (:mod:`.interface`) per node, and the
wiring of :class:`fattree.hdl.circuit_tree.CircuitFatTree` (``FatTree(h, 2)``).

Its ports are exactly those of :class:`~fattree.hdl.circuit_tree.CircuitFatTree`: ``tx[n]``,
``rx[n]`` (one stream beat per whole message), ``tx_done[n]``, ``tx_reject[n]``. A node may
keep ``window`` messages in flight, so ``tx_done`` and ``tx_reject`` pulse once per attempt's
fate, not once per message taken.

All routers read one shared LFSR register (one copy per block of router columns, as in the
paper tree), each taking its own LFSR's bit as a parity of it.
"""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...spec.circuit import LFSR_WIDTH, SHARED_SEED, router_seed
from ...spec.circuit_fast import CIRCUIT_TREE_FAST
from ...spec.topology import FatTree
from .._validation import validates_parameters
from ..circuit_tree import LFSR_COLUMNS
from ..lfsr import LFSR
from ..network_interface import rx_signature, tx_signature
from .interface import CircuitFastInterface
from .router import CircuitFastRouter

__all__ = ["CircuitFastTree"]


class CircuitFastTree(wiring.Component):
    """The whole network: routers, interfaces and wiring.

    Parameters
    ----------
    leaves : int
        Processing nodes, a power of two, ``2 .. 256``.
    width : int
        Data wires per link direction, ``1 .. 64``.
    length : int
        Data words per message, ``1 .. 64``.
    seed : int
        Network seed; every router's LFSR seed derives from it (``>= 0``).
    window : int
        Messages each node keeps in flight, a power of two, ``1 .. 16``.

    Attributes
    ----------
    tx : In(tx_signature(leaves, width, length))
        Per node, messages to send (``payload.dest``, ``payload.data``).
    rx : Out(rx_signature(width, length)).array(leaves)
        Per node, messages received (``payload.data``), each presented until ``ready``.
    tx_done, tx_reject : Out(1).array(leaves)
        Per node, one-cycle pulses: an attempt was delivered, or dropped (sent again).
    """

    @validates_parameters
    def __init__(self, leaves=16, width=8, length=2, seed=1, window=8):
        self.leaves = CIRCUIT_TREE_FAST.check("leaves", leaves)
        self.width = CIRCUIT_TREE_FAST.check("width", width)
        self.length = CIRCUIT_TREE_FAST.check("length", length)
        self.seed = CIRCUIT_TREE_FAST.check("seed", seed)
        self.window = CIRCUIT_TREE_FAST.check("window", window)
        self.h = leaves.bit_length() - 1
        self.topology = FatTree(self.h, 2)
        n = leaves
        super().__init__(
            {
                "tx": In(tx_signature(leaves, width, length)).array(n),
                "rx": Out(rx_signature(width, length)).array(n),
                "tx_done": Out(1).array(n),
                "tx_reject": Out(1).array(n),
            }
        )

    def elaborate(self, platform):
        m = Module()
        tree, h, leaves = self.topology, self.h, self.leaves
        lfsrs = []
        for copy in range(max(1, leaves // 2 // LFSR_COLUMNS)):
            lfsr = LFSR(LFSR_WIDTH, seed=SHARED_SEED)
            m.submodules["lfsr" if copy == 0 else f"lfsr{copy}"] = lfsr
            lfsrs.append(lfsr)
        routers = {}
        for level in range(h):
            for t in range(leaves // 2):
                seed = router_seed(self.seed, level, t)
                router = CircuitFastRouter(leaves, self.width, level, t, seed, shared_lfsr=True)
                m.d.comb += router.lfsr.eq(lfsrs[t // LFSR_COLUMNS].value)
                routers[level, t] = router
                m.submodules[f"r{level}_{t}"] = router
        for node in range(leaves):
            ni = CircuitFastInterface(leaves, self.width, self.length, self.window)
            m.submodules[f"ni{node}"] = ni
            t, port = tree.node_switch(node)
            leaf_port = routers[0, t].a if port == 0 else routers[0, t].b
            wiring.connect(m, ni.up, leaf_port.i)
            wiring.connect(m, leaf_port.o, ni.down)
            wiring.connect(m, wiring.flipped(self.tx[node]), ni.tx)
            wiring.connect(m, ni.rx, wiring.flipped(self.rx[node]))
            m.d.comb += [
                self.tx_done[node].eq(ni.tx_done),
                self.tx_reject[node].eq(ni.tx_reject),
            ]
        for level in tree.link_levels():
            for t in range(leaves // 2):
                child = routers[level, t]
                for up_port in (0, 1):
                    _, parent_index, down_port = tree.up_neighbour(level, t, up_port)
                    parent = routers[level + 1, parent_index]
                    up = child.c if up_port == 0 else child.d
                    down = parent.a if down_port == 0 else parent.b
                    wiring.connect(m, up.o, down.i)
                    wiring.connect(m, down.o, up.i)
        return m
