"""Circuit-switched fat tree of four-port routers (Strumpen and Krishnamurthy 2005, Fig. 1).

``leaves = 2^h`` processing nodes, each with a :class:`NetworkInterface`; the router node at
level ``l`` is ``2^l`` :class:`CircuitRouter` s (one per subtree of ``2^(l+1)`` nodes). The
wiring is :class:`fattree.spec.topology.FatTree` with ``w = 2`` (levels ``h``): switch
``SW(l, t)`` is a router, its down ports 0 and 1 are ``a`` and ``b``, its up ports 0 and 1
are ``c`` and ``d``; node ``n`` hangs on down port ``n mod 2`` of ``SW(0, n div 2)``.

Every router's random bit comes from one shared LFSR sequence (``shared_lfsr``, the same bits
as a register per router, in far fewer flip-flops); trees above 16 leaves hold a copy of the
register per block of router columns, so no one register drives the whole chip.

Each node has a transmit stream ``tx[n]`` and a receive stream ``rx[n]``
(``amaranth.lib.stream``, one beat per whole message; see :class:`NetworkInterface`): a
receiver that is not ready loses nothing, because its interface rejects new circuits while
its receive stream still holds a message.

Faults (``faults``, :mod:`fattree.spec.faults`: dead links, dead routers, stuck-at wires) are
applied where the tree wires its blocks together, so the routers and interfaces are the
healthy ones; with no fault the wiring, and the netlist, is the fault-free tree's.

For ``retry="round"`` the tree raises every interface's ``go`` one cycle after no interface
has a message in flight, so all pending messages start together: delivery rounds.
"""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..spec.circuit import CIRCUIT_TREE, LFSR_WIDTH, SHARED_SEED, router_seed
from ..spec.faults import check_faults, link_faults
from ..spec.topology import FatTree, Link
from ._validation import validates_parameters
from .circuit_router import CircuitRouter, shared_lfsr_bit
from .lfsr import LFSR
from .network_interface import NetworkInterface, rx_signature, tx_signature

__all__ = ["CircuitFatTree", "MAX_LEAVES"]

#: Most leaves the hardware is built for (the command line's range).
MAX_LEAVES = CIRCUIT_TREE["leaves"].hi
#: Router columns (routers of one ``t``, at every level) that share one copy of the LFSR
#: register; 8 keeps trees of up to 16 leaves at one register.
LFSR_COLUMNS = 8


class CircuitFatTree(wiring.Component):
    """The whole network: routers, interfaces and wiring.

    Parameters
    ----------
    leaves : int
        Processing nodes, a power of two, ``2 .. 1024``.
    width : int
        Data wires per link direction (1 = bit-serial), ``1 .. 64``.
    length : int
        Data words per message, ``1 .. 64``.
    seed : int
        Network seed; every router's and interface's LFSR seed derives from it (``>= 0``).
    retry : str or int
        ``"immediate"`` (0), ``"round"`` (1) or ``"backoff"`` (2).
    faults : str or sequence of Fault
        Dead links or routers and stuck-at wires (:mod:`fattree.spec.faults`), e.g.
        ``"up:1.3.0,eject:5,down:0.2.1/data0=1"``; empty (the default) for none.

    Attributes
    ----------
    tx : In(tx_signature(leaves, width, length)).array(leaves)
        Per node, messages to send (``payload.dest``, ``payload.data``).
    rx : Out(rx_signature(width, length)).array(leaves)
        Per node, messages received (``payload.data``), each held until ``ready``.
    tx_done, tx_reject : Out(1).array(leaves)
        Per node, one-cycle pulses: the message in flight was acknowledged, or rejected.
    """

    @validates_parameters
    def __init__(self, leaves=16, width=8, length=2, seed=1, retry="immediate", faults=""):
        self.leaves = CIRCUIT_TREE.check("leaves", leaves)
        self.width = CIRCUIT_TREE.check("width", width)
        self.length = CIRCUIT_TREE.check("length", length)
        self.seed = CIRCUIT_TREE.check("seed", seed)
        self.retry = CIRCUIT_TREE.check("retry", retry)
        self.faults = check_faults(faults, leaves, width)
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
        tree, h = self.topology, self.h
        faults = link_faults(self.faults, self.leaves, self.width)
        # One LFSR sequence for all routers: each takes its own LFSR's bit as a parity of this
        # state. Each block of LFSR_COLUMNS router columns (every level) has its own copy of
        # the register (same seed, so the same bits): one register fanning out to every
        # router across a large chip was the 64-leaf tree's critical path.
        lfsrs = []
        for copy in range(max(1, self.leaves // 2 // LFSR_COLUMNS)):
            lfsr = LFSR(LFSR_WIDTH, seed=SHARED_SEED)
            m.submodules["lfsr" if copy == 0 else f"lfsr{copy}"] = lfsr
            lfsrs.append(lfsr)
        routers = {}
        for level in range(h):
            for t in range(self.leaves // 2):
                seed = router_seed(self.seed, level, t)
                router = CircuitRouter(self.width, shared_lfsr=True)
                state = lfsrs[t // LFSR_COLUMNS].value
                bit = shared_lfsr_bit(m, state, seed, f"r{level}_{t}_lfsr_bit")
                m.d.comb += router.lfsr_bit.eq(bit)
                routers[level, t] = router
                m.submodules[f"r{level}_{t}"] = router
        nis = []
        for node in range(self.leaves):
            # The node's number and its back-off LFSR come from here, so that all interfaces
            # are one module: the number from a register that holds it (a constant would be
            # folded into the interface), the LFSR beside the interface.
            ni = NetworkInterface(None, self.leaves, self.width, self.length, self.retry, None)
            nis.append(ni)
            m.submodules[f"ni{node}"] = ni
            m.d.comb += ni.node.eq(_held(m, node, h, f"ni{node}_node"))
            if self.retry == "backoff":
                lfsr = LFSR(LFSR_WIDTH, seed=router_seed(self.seed, h, node))
                m.submodules[f"ni{node}_lfsr"] = lfsr
                m.d.comb += ni.lfsr.eq(lfsr.value)
            t, port = tree.node_switch(node)
            leaf_port = routers[0, t].a if port == 0 else routers[0, t].b
            _link(m, ni.up, leaf_port.i, faults.get(Link("inject", 0, t, port)))
            _link(m, leaf_port.o, ni.down, faults.get(Link("eject", 0, t, port)))
            wiring.connect(m, wiring.flipped(self.tx[node]), ni.tx)
            wiring.connect(m, ni.rx, wiring.flipped(self.rx[node]))
            m.d.comb += [
                self.tx_done[node].eq(ni.tx_done),
                self.tx_reject[node].eq(ni.tx_reject),
            ]
        for level in tree.link_levels():
            for t in range(self.leaves // 2):
                child = routers[level, t]
                for up_port in (0, 1):
                    _, parent_index, down_port = tree.up_neighbour(level, t, up_port)
                    parent = routers[level + 1, parent_index]
                    up = child.c if up_port == 0 else child.d
                    down = parent.a if down_port == 0 else parent.b
                    _link(m, up.o, down.i, faults.get(Link("up", level, t, up_port)))
                    _link(m, down.o, up.i, faults.get(Link("down", level, t, up_port)))
        # Delivery rounds: go when nothing was in flight in the previous cycle.
        go = Signal()
        in_flight = 0
        for ni in nis:
            in_flight = in_flight | ni.busy
        m.d.sync += go.eq(~in_flight)
        for ni in nis:
            m.d.comb += ni.go.eq(go)
        return m


def _link(m, sender, receiver, fault):
    """One link direction, ``sender`` (an outgoing link) to ``receiver``; with a
    :class:`~fattree.spec.faults.LinkFault` each wire reads as the fault says."""
    if fault is None:
        wiring.connect(m, sender, receiver)
        return
    width = len(sender.data)
    valid = sender.valid if fault.valid is None else _held(m, fault.valid, 1)
    reject = receiver.reject if fault.reject is None else _held(m, fault.reject, 1)
    ack = receiver.ack if fault.ack is None else _held(m, fault.ack, 1)
    keep = _held(m, fault.data_and & ((1 << width) - 1), width)
    data = (sender.data & keep) | _held(m, fault.data_or, width)
    m.d.comb += [
        receiver.valid.eq(valid),
        receiver.data.eq(data),
        sender.reject.eq(reject),
        sender.ack.eq(ack),
    ]


def _held(m, value, width, name="held"):
    """A register that always holds ``value`` (from reset on). Not a constant: Amaranth would
    fold a constant into the block it feeds, which then becomes a Verilog module of its own
    (and for a fault, the Verilog it writes for the interface's receive logic does not
    compile: Icarus, syntax error). Synthesis removes the register."""
    held = Signal(width, init=value, name=name)
    m.d.sync += held.eq(value)
    return held
