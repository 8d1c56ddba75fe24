"""AXI4-Stream tops of the RN1 networks with endpoints (``fattree verilog rn1-bidelta-stream
--ports axis``, ``rn1-fat-tree``; docs/axis.md and docs/dehon.md, "Endpoints").

:class:`RN1StreamAxis` renames the streams of
:class:`fattree.hdl.rn1.bidelta_stream.RN1BideltaStream` or
:class:`fattree.hdl.rn1.fat_tree.RN1FatTreeStream` to AXI4-Stream ports; it adds no logic
(the endpoint's streams already are byte streams framed by ``last``). The names follow the
rule of every AXI top (docs/axis.md, "Port names"). Per endpoint ``k``:

* ``s_axis_<k>_tdata`` (8), ``_tvalid``, ``_tready``, ``_tdest`` (``lg endpoints``),
  ``_tlast``: a frame is one message, one byte per beat; ``tdest`` of its first beat is the
  destination (later beats' ``tdest`` is ignored, as AXI lets a sink do within a packet);
  a frame longer than ``max_bytes`` is taken, thrown away and counted in ``dropped_<k>``.
* ``m_axis_<k>_tdata`` (8), ``_tvalid``, ``_tready``, ``_tlast``: messages received, one
  frame each, with ``tready`` low as long as the user likes: nothing is lost (the endpoint
  answers a transmission BLOCKED while its buffers are full, and the sender retries).
* The endpoint's counters as plain outputs ``<counter>_<k>`` (16 bits, saturating).
* No ``tid``: RN1 carries no source (the head bytes are routing, the destination sees data
  only); a user who needs it puts it in the payload.
* Clock ``aclk``, reset ``aresetn`` (active low, synchronous), as AXI names them.
"""

from amaranth import ClockDomain, Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ...spec.rn1_endpoint import dest_bits

__all__ = ["RN1StreamAxis", "rn1_bidelta_stream_axis", "rn1_fat_tree_axis"]


class RN1StreamAxis(wiring.Component):
    """An RN1 network with endpoints (``inner``: ``tx``/``rx`` stream arrays and counter
    arrays, :func:`fattree.hdl.rn1.endpoint.stream_members`) with AXI4-Stream ports.

    Attributes
    ----------
    aclk, aresetn : In(1)
    s_axis_<k>_tdata, _tvalid, _tready, _tdest, _tlast
        Messages into the network from endpoint ``k``.
    m_axis_<k>_tdata, _tvalid, _tready, _tlast
        Messages out of the network at endpoint ``k``.
    <counter>_<k> : Out(16)
        Endpoint ``k``'s counters (``sent``, ``retries``, ``received``, ``dropped``, ...).
    """

    def __init__(self, inner: wiring.Component):
        self.inner = inner
        self.n = n = len(inner.tx)
        members = {"aclk": In(1), "aresetn": In(1)}
        for k in range(n):
            s, m = f"s_axis_{k}_", f"m_axis_{k}_"
            members |= {
                s + "tdata": In(8),
                s + "tvalid": In(1),
                s + "tready": Out(1),
                s + "tdest": In(dest_bits(n)),
                s + "tlast": In(1),
                m + "tdata": Out(8),
                m + "tvalid": Out(1),
                m + "tready": In(1),
                m + "tlast": Out(1),
            }
        #: The counter arrays of ``inner``, passed through as ``<name>_<k>``.
        self.counters = [
            (name, member.shape)
            for name, member in inner.signature.members.items()
            if member.is_port and member.flow == Out
        ]
        for name, shape in self.counters:
            members |= {f"{name}_{k}": Out(shape) for k in range(n)}
        for name, member in inner.signature.members.items():
            streams = member.is_signature and isinstance(member.signature, stream.Signature)
            if not streams and not (member.is_port and member.flow == Out):
                raise TypeError(f"member {name} of {type(inner).__name__} is not a stream")
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = sync = ClockDomain("sync")
        m.d.comb += [sync.clk.eq(self.aclk), sync.rst.eq(~self.aresetn)]
        m.submodules.inner = inner = self.inner
        for k in range(self.n):
            s = lambda name, k=k: getattr(self, f"s_axis_{k}_{name}")  # noqa: E731
            o = lambda name, k=k: getattr(self, f"m_axis_{k}_{name}")  # noqa: E731
            tx, rx = inner.tx[k], inner.rx[k]
            m.d.comb += [
                tx.valid.eq(s("tvalid")),
                tx.payload.data.eq(s("tdata")),
                tx.payload.dest.eq(s("tdest")),
                tx.payload.last.eq(s("tlast")),
                s("tready").eq(tx.ready),
                o("tvalid").eq(rx.valid),
                o("tdata").eq(rx.payload.data),
                o("tlast").eq(rx.payload.last),
                rx.ready.eq(o("tready")),
            ]
            for name, _ in self.counters:
                m.d.comb += getattr(self, f"{name}_{k}").eq(getattr(inner, name)[k])
        return m


def rn1_bidelta_stream_axis(**params) -> RN1StreamAxis:
    """``rn1-bidelta-stream`` with AXI4-Stream ports (parameters as
    :class:`fattree.hdl.rn1.bidelta_stream.RN1BideltaStream`, checked there)."""
    from .bidelta_stream import RN1BideltaStream

    return RN1StreamAxis(RN1BideltaStream(**params))


def rn1_fat_tree_axis(**params) -> RN1StreamAxis:
    """``rn1-fat-tree`` with AXI4-Stream ports (parameters as
    :class:`fattree.hdl.rn1.fat_tree.RN1FatTreeStream`, checked there)."""
    from .fat_tree import fat_tree_stream_top

    return RN1StreamAxis(fat_tree_stream_top(**params))
