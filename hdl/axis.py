"""AXI4-Stream tops for users outside Amaranth (``fattree verilog circuit-tree-paper --ports
axis``; docs/axis.md): the circuit trees' and the generic :class:`StreamAxis`. Every AXI top
follows one naming rule (docs/axis.md, "Port names"): leaf ``k``'s streams ``s_axis_<k>_*``
into the network and ``m_axis_<k>_*`` out of it, other streams ``s_axis_<name>_*`` /
``m_axis_<name>_*``, clock ``aclk``, reset ``aresetn``, and documented sideband ports.

:class:`CircuitTreeAxis` wraps :class:`fattree.hdl.circuit_tree.CircuitFatTree`. Per leaf
``k`` it has a slave port ``s_axis_<k>_*`` (into the network: ``tdata``, ``tvalid``,
``tready``, ``tdest``, ``tlast``), a master port ``m_axis_<k>_*`` (out of the network:
``tdata``, ``tvalid``, ``tready``, ``tlast``) and a counter ``dropped_<k>``.

* **One beat per word**: ``tdata`` is ``width`` bits, a frame is ``length`` beats with
  ``tlast`` on the last one. The slave side collects a frame into one message (word 0, the
  first beat, in the low bits) and offers it to the network; the master side sends a received
  message out word by word and frees the network's receive register on the last beat.
* The destination is ``tdest`` of a frame's first beat.
* A frame of the wrong length (``tlast`` before the ``length``-th beat, or not on it: then
  every beat up to its ``tlast`` is taken and thrown away), or addressed to its own leaf, is
  dropped and counted in ``dropped_<k>`` (16 bits, saturating): nothing is lost silently.
* No ``tid``: the circuit protocol carries no source (the route words are stripped on the way
  and the destination only sees data), so the network cannot know it; a user who needs it
  puts it in ``tdata``.
* Clock ``aclk``, reset ``aresetn`` (active low, synchronous: sampled on ``aclk``'s rising
  edge), as AXI names them; they drive the ``sync`` domain of the wrapped network.

The ports are flat members (``s_axis_3_tdata``), not arrays, so that the Verilog names are
the AXI ones that tools (and cocotbext-axi's ``AxiStreamBus.from_prefix``) look for.
"""

from amaranth import ClockDomain, Module, Mux, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ._validation import validates_parameters
from .circuit_fast.tree import CircuitFastTree
from .circuit_tree import CircuitFatTree

__all__ = [
    "CircuitTreeAxis",
    "CircuitTreeFastAxis",
    "DROP_COUNTER_WIDTH",
    "StreamAxis",
    "scheduler_axis",
    "leiserson_stream_axis",
]

#: Width of each ``dropped_<k>`` counter; it stops at its largest value.
DROP_COUNTER_WIDTH = 16


class CircuitTreeAxis(wiring.Component):
    """:class:`CircuitFatTree` with AXI4-Stream ports, one beat per word.

    Parameters
    ----------
    leaves, width, length, seed, retry, faults
        As :class:`CircuitFatTree` (checked there, with the same messages).

    Attributes
    ----------
    aclk, aresetn : In(1)
        Clock and active-low synchronous reset of the whole network.
    s_axis_<k>_tdata, _tvalid, _tready, _tdest, _tlast
        Per leaf ``k``, frames into the network (``tdata`` ``width`` bits, ``tdest``
        ``lg leaves`` bits).
    m_axis_<k>_tdata, _tvalid, _tready, _tlast
        Per leaf ``k``, frames out of the network.
    dropped_<k> : Out(16)
        Per leaf ``k``, frames dropped: wrong length, or addressed to leaf ``k`` itself.
    """

    @validates_parameters
    def __init__(self, leaves=16, width=8, length=2, seed=1, retry="immediate", faults=""):
        tree = CircuitFatTree(leaves, width, length, seed, retry, faults)
        self._wrap(tree, leaves, width, length)

    def _wrap(self, tree, leaves: int, width: int, length: int) -> None:
        """The AXI4-Stream ports around ``tree`` (a circuit tree's stream ports)."""
        self.tree = tree
        self.leaves, self.width, self.length = leaves, width, length
        h = self.tree.h
        members = {"aclk": In(1), "aresetn": In(1)}
        for k in range(leaves):
            s, m = f"s_axis_{k}_", f"m_axis_{k}_"
            members |= {
                s + "tdata": In(width),
                s + "tvalid": In(1),
                s + "tready": Out(1),
                s + "tdest": In(h),
                s + "tlast": In(1),
                m + "tdata": Out(width),
                m + "tvalid": Out(1),
                m + "tready": In(1),
                m + "tlast": Out(1),
                f"dropped_{k}": Out(DROP_COUNTER_WIDTH),
            }
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = sync = ClockDomain("sync")
        m.d.comb += [sync.clk.eq(self.aclk), sync.rst.eq(~self.aresetn)]
        m.submodules.tree = tree = self.tree
        for k in range(self.leaves):
            self._slave(m, k, tree.tx[k])
            self._master(m, k, tree.rx[k])
        return m

    def _port(self, name: str):
        return getattr(self, name)

    def _slave(self, m, k: int, tx) -> None:
        """Collect ``length`` beats into one message; hold it on ``tx`` until taken."""
        p = lambda name: self._port(f"s_axis_{k}_{name}")  # noqa: E731
        width, length = self.width, self.length
        words = Signal(width * length, name=f"s{k}_words")
        dest = Signal(len(tx.payload.dest), name=f"s{k}_dest")
        beat = Signal(range(length), name=f"s{k}_beat")
        discard = Signal(name=f"s{k}_discard")  # inside a too-long frame: wait for its tlast
        pending = Signal(name=f"s{k}_pending")  # a whole message waits for the network
        dropped = self._port(f"dropped_{k}")

        m.d.comb += [
            p("tready").eq(~pending),
            tx.valid.eq(pending),
            tx.payload.dest.eq(dest),
            tx.payload.data.eq(words),
        ]
        with m.If(tx.valid & tx.ready):
            m.d.sync += pending.eq(0)

        drop = Signal(name=f"s{k}_drop")
        with m.If(drop & (dropped != (1 << DROP_COUNTER_WIDTH) - 1)):
            m.d.sync += dropped.eq(dropped + 1)

        last_beat = beat == length - 1
        frame_dest = Mux(beat == 0, p("tdest"), dest)
        with m.If(p("tvalid") & p("tready")):
            with m.If(discard):
                with m.If(p("tlast")):
                    m.d.sync += discard.eq(0)
            with m.Else():
                # Word 0 ends in the low bits after `length` shifts.
                if length > 1:
                    m.d.sync += words.eq(words[width:] | (p("tdata") << (width * (length - 1))))
                else:
                    m.d.sync += words.eq(p("tdata"))
                with m.If(beat == 0):
                    m.d.sync += dest.eq(p("tdest"))
                with m.If(p("tlast") & ~last_beat):  # too short
                    m.d.comb += drop.eq(1)
                    m.d.sync += beat.eq(0)
                with m.Elif(~p("tlast") & last_beat):  # too long: drop the rest too
                    m.d.comb += drop.eq(1)
                    m.d.sync += [beat.eq(0), discard.eq(1)]
                with m.Elif(last_beat):
                    m.d.sync += beat.eq(0)
                    with m.If(frame_dest == k):  # the network has no path to the sender
                        m.d.comb += drop.eq(1)
                    with m.Else():
                        m.d.sync += pending.eq(1)
                with m.Else():
                    m.d.sync += beat.eq(beat + 1)

    def _master(self, m, k: int, rx) -> None:
        """Send the received message out word by word; free ``rx`` on the last beat."""
        p = lambda name: self._port(f"m_axis_{k}_{name}")  # noqa: E731
        width, length = self.width, self.length
        beat = Signal(range(length), name=f"m{k}_beat")
        last_beat = beat == length - 1
        m.d.comb += [
            p("tvalid").eq(rx.valid),
            p("tdata").eq(rx.payload.data.word_select(beat, width)),
            p("tlast").eq(last_beat),
            rx.ready.eq(p("tready") & last_beat),
        ]
        with m.If(p("tvalid") & p("tready")):
            m.d.sync += beat.eq(Mux(last_beat, 0, beat + 1))


class CircuitTreeFastAxis(CircuitTreeAxis):
    """:class:`CircuitFastTree` with the AXI4-Stream ports of :class:`CircuitTreeAxis`.

    Parameters
    ----------
    leaves, width, length, seed, window, faults
        As :class:`CircuitFastTree` (checked there, with the same messages).
    """

    @validates_parameters
    def __init__(self, leaves=16, width=8, length=2, seed=1, window=8, faults=""):
        tree = CircuitFastTree(leaves, width, length, seed, window, faults)
        self._wrap(tree, leaves, width, length)


class StreamAxis(wiring.Component):
    """Any component whose edges are ``amaranth.lib.stream`` ports, with AXI4-Stream names.

    The names follow the rule of every AXI top (docs/axis.md, "Port names"). An array of
    streams is the per-leaf stream: into the design (``In``) element ``k`` becomes
    ``s_axis_<k>_*``, out of it (``Out``) ``m_axis_<k>_*``; so ``inner`` may have at most one
    stream array each way (``TypeError`` otherwise). A single stream member ``x`` becomes
    ``s_axis_x_*`` or ``m_axis_x_*``. Each has ``tdata``, ``tvalid`` and ``tready``;
    ``tdata`` is the payload's bits, zero-padded to whole bytes (padding ignored on the way
    in, 0 on the way out). One beat is one whole message, so there is no ``tlast``
    (AXI4-Stream lets it be absent: every transfer is then a packet). Other members
    (``cycle_valid``, ...) keep their names. Clock ``aclk``, reset ``aresetn`` (active low,
    synchronous) drive the ``sync`` domain of ``inner``.
    """

    def __init__(self, inner: wiring.Component):
        self.inner = inner
        #: (inner port, AXI prefix, into the design?) of every stream.
        self.streams = []
        #: names of the other members, passed through.
        self.plain = []
        members = {"aclk": In(1), "aresetn": In(1)}
        per_leaf = {}  # direction -> the stream array that is the per-leaf stream
        for name, member in inner.signature.members.items():
            if member.is_signature and isinstance(member.signature, stream.Signature):
                into = member.flow == In
                ports = getattr(inner, name)
                if member.dimensions:
                    # Two arrays one way would both be s_axis_<k>: name them apart first.
                    owner = type(inner).__name__
                    if len(member.dimensions) > 1:
                        raise TypeError(f"stream array {name} of {owner} has more than one index")
                    if into in per_leaf:
                        way = "into" if into else "out of"
                        raise TypeError(
                            f"{owner} has two stream arrays {way} it, {per_leaf[into]} and "
                            f"{name}: only one can be the per-leaf stream"
                        )
                    per_leaf[into] = name
                    indexed = [(str(k), ports[k]) for k in range(len(ports))]
                else:
                    indexed = [(name, ports)]
                for label, port in indexed:
                    prefix = ("s_axis_" if into else "m_axis_") + label + "_"
                    width = -(-len(Value.cast(port.payload)) // 8) * 8 or 8
                    members |= {
                        prefix + "tdata": (In if into else Out)(width),
                        prefix + "tvalid": (In if into else Out)(1),
                        prefix + "tready": (Out if into else In)(1),
                    }
                    self.streams.append((port, prefix, into))
            elif member.is_port:
                members[name] = member
                self.plain.append(name)
            else:
                raise TypeError(f"member {name} of {type(inner).__name__} is not a stream")
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = sync = ClockDomain("sync")
        m.d.comb += [sync.clk.eq(self.aclk), sync.rst.eq(~self.aresetn)]
        m.submodules.inner = inner = self.inner
        for port, prefix, into in self.streams:
            p = lambda name, prefix=prefix: getattr(self, prefix + name)  # noqa: E731
            payload = Value.cast(port.payload)
            if into:
                m.d.comb += [
                    port.payload.eq(p("tdata")[: len(payload)]),
                    port.valid.eq(p("tvalid")),
                    p("tready").eq(port.ready),
                ]
            else:
                m.d.comb += [
                    p("tdata").eq(payload),
                    p("tvalid").eq(port.valid),
                    port.ready.eq(p("tready")),
                ]
        for name in self.plain:
            if self.inner.signature.members[name].flow == In:
                m.d.comb += getattr(inner, name).eq(getattr(self, name))
            else:
                m.d.comb += getattr(self, name).eq(getattr(inner, name))
        return m


def scheduler_axis(**params) -> StreamAxis:
    """The scheduler with AXI4-Stream ports: ``s_axis_requests_*``, ``m_axis_results_*``."""
    from .scheduler import LevelWiseScheduler

    return StreamAxis(LevelWiseScheduler(**params))


def leiserson_stream_axis(**params) -> StreamAxis:
    """The Leiserson tree behind stream ports with AXI4-Stream names: per leaf ``k``
    ``s_axis_<k>_*`` (its ``tx``) and ``m_axis_<k>_*`` (its ``rx``), and
    ``cycle_valid``/``cycle_ready`` as they are."""
    from .leiserson_stream import leiserson_stream_tree

    return StreamAxis(leiserson_stream_tree(**params))
