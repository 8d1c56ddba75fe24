"""The fast circuit tree (``circuit-tree``, :mod:`fattree.spec.circuit_fast`) as one
component: the routers of :mod:`.router`, an interface (:mod:`.interface`) per node, and the
wiring of :class:`fattree.hdl.circuit_tree.CircuitFatTree` (``FatTree(h, 2)``).

Its ports are exactly those of :class:`~fattree.hdl.circuit_tree.CircuitFatTree`: ``tx[n]``,
``rx[n]`` (one stream beat per whole message), ``tx_done[n]``, ``tx_reject[n]``. A node may
keep ``window`` messages in flight, so ``tx_done`` and ``tx_reject`` pulse once per attempt's
fate, not once per message taken.

All routers read one shared LFSR register (one copy per block of router columns, as in the
paper tree), each taking its own LFSR's bit as a parity of it.

Faults (``faults``: dead links and routers, stuck ``valid``, ``destK``, ``dataK`` and ``ack``
wires; :mod:`fattree.spec.circuit_fast`, "Faults") are applied where the tree wires its
blocks together, as in the paper tree, so the routers and interfaces are the healthy ones;
with no fault the netlist is the fault-free tree's.
"""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...spec.circuit import LFSR_WIDTH, SHARED_SEED, router_seed
from ...spec.circuit_fast import CIRCUIT_TREE_FAST, FAULT_WIRES, link_delay, subtree
from ...spec.faults import check_faults, link_faults
from ...spec.topology import FatTree, Link
from .._validation import validates_parameters
from ..circuit_router import shared_lfsr_bit
from ..circuit_tree import LFSR_COLUMNS, _held
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
    faults : str or sequence of Fault
        Dead links or routers and stuck-at wires (:mod:`fattree.spec.faults` with the wires
        ``valid``, ``destK``, ``dataK``, ``ack``), e.g. ``"up:1.3.0,eject:5,inject:2/ack=1"``;
        empty (the default) for none.

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
    def __init__(self, leaves=16, width=8, length=2, seed=1, window=8, faults=""):
        self.leaves = CIRCUIT_TREE_FAST.check("leaves", leaves)
        self.width = CIRCUIT_TREE_FAST.check("width", width)
        self.length = CIRCUIT_TREE_FAST.check("length", length)
        self.seed = CIRCUIT_TREE_FAST.check("seed", seed)
        self.window = CIRCUIT_TREE_FAST.check("window", window)
        self.faults = check_faults(faults, leaves, width, FAULT_WIRES)
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
        faults = link_faults(self.faults, leaves, self.width, FAULT_WIRES)

        def link(sender, receiver, *name):
            where = Link(*name)
            _link(m, sender, receiver, faults.get(where), link_delay(h, where))

        lfsrs = []
        for copy in range(max(1, leaves // 2 // LFSR_COLUMNS)):
            lfsr = LFSR(LFSR_WIDTH, seed=SHARED_SEED)
            m.submodules["lfsr" if copy == 0 else f"lfsr{copy}"] = lfsr
            lfsrs.append(lfsr)
        routers = {}
        for level in range(h):
            for t in range(leaves // 2):
                seed = router_seed(self.seed, level, t)
                # One module per level: the random bit and the subtree number come from here
                # (the number from a register that holds it: a constant would be folded into
                # the router).
                router = CircuitFastRouter(
                    leaves, self.width, level, shared_lfsr=True, subtree_input=True
                )
                state = lfsrs[t // LFSR_COLUMNS].value
                bit = shared_lfsr_bit(m, state, seed, f"r{level}_{t}_lfsr_bit")
                m.d.comb += router.lfsr_bit.eq(bit)
                if level < h - 1:
                    number = _held(m, subtree(level, t), h - level - 1, f"r{level}_{t}_subtree")
                    m.d.comb += router.subtree.eq(number)
                routers[level, t] = router
                m.submodules[f"r{level}_{t}"] = router
        for node in range(leaves):
            ni = CircuitFastInterface(leaves, self.width, self.length, self.window)
            m.submodules[f"ni{node}"] = ni
            t, port = tree.node_switch(node)
            leaf_port = routers[0, t].a if port == 0 else routers[0, t].b
            link(ni.up, leaf_port.i, "inject", 0, t, port)
            link(leaf_port.o, ni.down, "eject", 0, t, port)
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
                    link(up.o, down.i, "up", level, t, up_port)
                    link(down.o, up.i, "down", level, t, up_port)
        return m


def _link(m, sender, receiver, fault, delay):
    """One link direction, ``sender`` (an outgoing link) to ``receiver``, whose mirror delay
    is ``delay``; with a :class:`~fattree.spec.faults.LinkFault` each wire reads as the fault
    says (fattree/spec/circuit_fast.py, "Faults")."""
    if fault is None:
        wiring.connect(m, sender, receiver)
        return
    valid = sender.valid if fault.valid is None else _held(m, fault.valid, 1)
    fields = {}
    for name, keep, force in (
        ("dest", fault.dest_and, fault.dest_or),
        ("data", fault.data_and, fault.data_or),
    ):
        width = len(getattr(sender, name))
        keep = _held(m, keep & ((1 << width) - 1), width)
        fields[name] = (getattr(sender, name) & keep) | _held(m, force, width)
    if fault.ack is None:
        ack = receiver.ack
    elif fault.ack == 0:
        ack = _held(m, 0, 1)
    else:
        # Stuck at 1 in the cycles the rules read: the fate of each head sent on the link,
        # `delay` cycles after it. A router passes an output's ack of any cycle back to an
        # input; a 1 in a cycle no head owns would acknowledge heads that never came here.
        line = [Signal(name=f"owned{k}") for k in range(1, delay + 1)]
        m.d.sync += line[0].eq(sender.head)
        for k in range(1, delay):
            m.d.sync += line[k].eq(line[k - 1])
        ack = receiver.ack | line[-1]
    m.d.comb += [
        receiver.valid.eq(valid),
        # A head is read only with valid (a healthy sender raises it only with valid).
        receiver.head.eq(sender.head & valid),
        receiver.dest.eq(fields["dest"]),
        receiver.data.eq(fields["data"]),
        sender.ack.eq(ack),
    ]
