"""Endpoint interface of an RN1 network (DeHon 1993: "processing nodes generally each have
two inputs and two outputs to the network"), and how a network gets one per node
(:func:`stream_members`, :func:`attach_endpoints`).

:class:`RN1Endpoint` turns a stream of messages into RN1 transmissions and back
(docs/dehon.md, section "Endpoints"; definitions in :mod:`fattree.spec.rn1_endpoint`):

* **Send**, one message at a time: the ``tx`` beats (one byte each, ``dest`` on the first,
  ``last`` on the last) are collected into a buffer of ``max_bytes``; then the endpoint opens
  a connection on one of its two network outputs (head byte for ``dest`` by the network's
  route rule, ``route``: a constant function of ``dest`` in hardware), sends the bytes,
  closes with DROP and waits for the status the routers carry back end to end. CONNECTED:
  the message is done (``sent`` counts it). BLOCKED: ``retries`` counts it and the message
  is sent again, per ``retry``: ``immediate`` (the next cycle), ``round`` (when ``go`` is
  high: the network raises it when nothing was in flight), ``backoff`` (random exponential
  back-off from the endpoint's LFSR). A frame longer than ``max_bytes`` is taken, thrown
  away and counted in ``dropped``.
* **Status timeout**: no status after ``timeout`` cycles of waiting (a dead link or router
  on the way) gives the attempt up as BLOCKED would (``timeouts`` counts it); the
  :data:`~fattree.spec.rn1_endpoint.GIVE_UP`-th timeout in a row drops the message
  (``dropped``), so a broken network never holds a sender for good.
* **Two outputs**: every attempt uses the output the last one did not, so a retry after
  BLOCKED meets a different first router, and messages are spread over both.
* **Receive**, on each network input independently: a transmission whose head arrives while
  that input's buffer is empty is stored and answered CONNECTED one cycle after its close
  (``received`` counts it); one arriving while the buffer still holds a message the user has
  not taken is discarded and answered BLOCKED, so its sender retries: nothing is lost. The
  two buffers go out on ``rx`` in turn, one beat per byte, ``last`` on the last.
* No turns: the CONNECTED status already comes from the destination, so it is the
  acknowledgement; a turn would cost every message a reply transmission.

The cycle-exact reference is :class:`fattree.sim.models.rn1_endpoint.RN1EndpointModel`.
"""

from dataclasses import dataclass
from typing import NamedTuple

from amaranth import Const, Module, Mux, Signal
from amaranth.hdl import Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out, connect, flipped

from ...params import check_int_range
from ...spec.rn1 import BLOCKED, CONNECTED, word
from ...spec.rn1_bidelta import ENDPOINT_LINKS, check_endpoints
from ...spec.rn1_endpoint import (
    BACKOFF_CAP,
    BACKOFF_SLOT,
    COUNTER_BITS,
    GIVE_UP,
    LFSR_WIDTH,
    TIMEOUT,
    check_max_bytes,
    check_retry,
    check_route,
    check_timeout,
    head_bits,
    path_routers,
    route_heads,
    rx_fields,
    tx_fields,
)
from .._validation import validates_parameters
from ..lfsr import LFSR
from .router import channel_signature

__all__ = [
    "tx_signature",
    "rx_signature",
    "RN1Endpoint",
    "stream_members",
    "attach_endpoints",
]

# Send states.
LOAD, PEND, SEND, WAIT = range(4)
# Receive states, per network input.
R_IDLE, R_RECV, R_DISCARD = range(3)


def tx_signature(endpoints: int) -> stream.Signature:
    """Messages to send, one beat per byte (:func:`fattree.spec.rn1_endpoint.tx_fields`)."""
    return stream.Signature(data.StructLayout(tx_fields(endpoints)))


def rx_signature() -> stream.Signature:
    """Messages received, one beat per byte (:func:`fattree.spec.rn1_endpoint.rx_fields`)."""
    return stream.Signature(data.StructLayout(rx_fields()))


def _saturating_add(m, counter, inc):
    top = (1 << COUNTER_BITS) - 1
    total = Signal(COUNTER_BITS + 2)
    m.d.comb += total.eq(counter + inc)
    m.d.sync += counter.eq(Mux(total > top, top, total))


@dataclass(frozen=True)
class _Sender:
    """The send side's registers: one message at a time."""

    state: Signal  # LOAD, PEND, SEND, WAIT
    buf: Signal  # the message's bytes
    count: Signal  # bytes of the message in the buffer
    over: Signal  # the frame being taken is longer than max_bytes
    dest: Signal
    pos: Signal  # next byte to send
    port: Signal  # the output of the next attempt
    attempts: Signal  # BLOCKED in a row, stops at the cap
    wait: Signal  # back-off cycles left before the next attempt
    age: Signal  # cycles of WAIT without a status so far
    strikes: Signal  # timeouts in a row for this message


class _Strobes(NamedTuple):
    """High in a cycle that adds one to the counter of the same name."""

    sent: Signal
    retry: Signal
    drop: Signal
    timeout: Signal


class RN1Endpoint(wiring.Component):
    """One endpoint of an RN1 network of ``endpoints`` endpoints.

    Parameters
    ----------
    endpoints : int
        Endpoints of the network (4, 16, 64, 256; 64 for ``route="unit-tree"``).
    retry : str or int
        ``"immediate"`` (0), ``"round"`` (1) or ``"backoff"`` (2).
    seed : int
        Seed of the back-off LFSR, ``1 .. 65535``.
    max_bytes : int
        Payload bytes per message at most, ``1 .. 64`` (the send and receive buffers).
    route : str
        The network's route rule (:data:`fattree.spec.rn1_endpoint.ROUTES`): ``"bidelta"``
        (the head a permutation of ``dest``'s bits, the same from every endpoint) or
        ``"unit-tree"`` (the one-stage fat-tree: the head depends on ``node`` too).
    node : int
        This endpoint's number, ``0 .. endpoints - 1`` (the bidelta's heads do not use it).
    timeout : int
        Cycles of waiting for a status before an attempt is given up, ``1 .. 1024`` and at
        least the network's longest wait (:func:`fattree.spec.rn1_endpoint.check_timeout`).

    Attributes
    ----------
    o : Out(channel_signature()).array(2)
        Into the network (``fwd`` out, ``bk`` in: statuses).
    i : In(channel_signature()).array(2)
        From the network (``fwd`` in, ``bk`` out: this endpoint's answers).
    tx : In(tx_signature(endpoints))
        Messages to send.
    rx : Out(rx_signature())
        Messages received.
    go : In(1)
        Round boundary, for ``retry="round"``.
    busy : Out(1)
        A transmission is under way (sent and not yet answered).
    sent, retries, received, dropped, timeouts : Out(16)
        Messages confirmed CONNECTED; BLOCKED statuses (each one retried); messages stored
        and answered CONNECTED; messages thrown away (frames longer than ``max_bytes``, and
        messages given up after ``GIVE_UP`` timeouts in a row); attempts given up for want
        of a status.
    """

    @validates_parameters
    def __init__(
        self,
        endpoints=16,
        retry="immediate",
        seed=1,
        max_bytes=8,
        route="bidelta",
        node=0,
        timeout=TIMEOUT,
    ):
        self.endpoints = check_endpoints(endpoints)
        self.retry = check_retry(retry)
        self.seed = check_int_range("seed", seed, 1, (1 << LFSR_WIDTH) - 1)
        self.max_bytes = check_max_bytes(max_bytes)
        self.route = check_route(route)
        self.node = check_int_range("node", node, 0, self.endpoints - 1)
        self.heads = route_heads(self.route, self.endpoints, self.node)
        self.timeout = check_timeout(timeout, path_routers(self.route, self.endpoints))
        channel = channel_signature()
        super().__init__(
            {
                "o": Out(channel).array(ENDPOINT_LINKS),
                "i": In(channel).array(ENDPOINT_LINKS),
                "tx": In(tx_signature(endpoints)),
                "rx": Out(rx_signature()),
                "go": In(1),
                "busy": Out(1),
                "sent": Out(COUNTER_BITS),
                "retries": Out(COUNTER_BITS),
                "received": Out(COUNTER_BITS),
                "dropped": Out(COUNTER_BITS),
                "timeouts": Out(COUNTER_BITS),
            }
        )

    def elaborate(self, platform):
        m = Module()
        self._send(m)
        self._receive(m)
        return m

    def _send(self, m):
        """One message at a time: LOAD takes a frame, PEND waits for the retry strategy's
        moment and sends the head, SEND the bytes, WAIT waits for the status."""
        s = self._send_registers()
        m.d.comb += [
            self.tx.ready.eq(s.state == LOAD),
            self.busy.eq((s.state == SEND) | (s.state == WAIT)),
        ]
        head = self._head(m, s.dest)
        out, drive, bk = self._send_links(m, s.port)
        inc = self._send_counters(m)
        lfsr = None
        if self.retry == "backoff":
            m.submodules.lfsr = lfsr = LFSR(LFSR_WIDTH, seed=self.seed)

        with m.Switch(s.state):
            with m.Case(LOAD):
                self._take_frame(m, s, inc)
            with m.Case(PEND):
                with m.If(self._may_open(m, s)):
                    m.d.comb += [drive.eq(1), out.eq(word(1, 0) | head)]
                    m.d.sync += [s.pos.eq(0), s.state.eq(SEND)]
            with m.Case(SEND):
                m.d.comb += [drive.eq(1), out.eq(word(1, 0) | s.buf.word_select(s.pos, 8))]
                m.d.sync += s.pos.eq(s.pos + 1)
                with m.If(s.pos == s.count - 1):
                    m.d.sync += [s.age.eq(0), s.state.eq(WAIT)]
            with m.Case(WAIT):
                self._await_status(m, s, bk, inc, lfsr)

    def _send_registers(self) -> _Sender:
        mb = self.max_bytes
        state = Signal(2)
        buf = Signal(8 * mb)
        count = Signal(range(mb + 1))
        over = Signal()
        dest = Signal(len(self.tx.payload.dest))
        pos = Signal(range(mb + 1))
        port = Signal()
        attempts = Signal(range(BACKOFF_CAP + 1))
        wait = Signal(range(BACKOFF_SLOT * ((1 << BACKOFF_CAP) - 1) + 1))
        age = Signal(range(self.timeout))
        strikes = Signal(range(GIVE_UP))
        return _Sender(state, buf, count, over, dest, pos, port, attempts, wait, age, strikes)

    def _head(self, m, dest):
        """The head byte that opens a connection to ``dest``, by the network's route rule."""
        head = Signal(8)
        if self.route == "bidelta":
            # A permutation of dest's bits: wiring.
            for bit, src in enumerate(head_bits(self.endpoints)):
                if src is not None:
                    m.d.comb += head[bit].eq(dest[src])
        else:
            # This node's constant table, one entry per destination (a few LUTs).
            with m.Switch(dest):
                for d, h in enumerate(self.heads):
                    with m.Case(d):
                        m.d.comb += head.eq(h)
        return head

    def _send_links(self, m, port):
        """The two outputs into the network: ``out`` goes onto output ``port`` in a cycle
        that sets ``drive``; ``bk`` is the status coming back on it. Returns
        ``(out, drive, bk)``."""
        # The forward links carry 0 (idle, and the DROP close after the last byte) unless
        # this cycle sends a word.
        out = Signal(9)
        drive = Signal()
        m.d.sync += [
            Value.cast(self.o[k].fwd).eq(Mux(drive & (port == k), out, 0))
            for k in range(ENDPOINT_LINKS)
        ]
        bk = Signal(9)
        m.d.comb += bk.eq(Mux(port, Value.cast(self.o[1].bk), Value.cast(self.o[0].bk)))
        return out, drive, bk

    def _send_counters(self, m) -> _Strobes:
        """``sent``, ``retries``, ``dropped`` and ``timeouts``, each counting the cycles its
        strobe is high."""
        sent_inc, retry_inc, drop_inc, timeout_inc = Signal(), Signal(), Signal(), Signal()
        _saturating_add(m, self.sent, sent_inc)
        _saturating_add(m, self.retries, retry_inc)
        _saturating_add(m, self.dropped, drop_inc)
        _saturating_add(m, self.timeouts, timeout_inc)
        return _Strobes(sent_inc, retry_inc, drop_inc, timeout_inc)

    def _take_frame(self, m, s: _Sender, inc: _Strobes):
        """LOAD: the ``tx`` beats into the buffer; on the last, a frame that fits goes on to
        PEND and a longer one is dropped."""
        tx, mb = self.tx, self.max_bytes
        with m.If(tx.valid):
            with m.If(s.count == 0):
                m.d.sync += s.dest.eq(tx.payload.dest)
            with m.If(s.count == mb):
                m.d.sync += s.over.eq(1)
            with m.Else():
                m.d.sync += [
                    s.buf.word_select(s.count, 8).eq(tx.payload.data),
                    s.count.eq(s.count + 1),
                ]
            with m.If(tx.payload.last):
                with m.If(s.over | (s.count == mb)):
                    m.d.comb += inc.drop.eq(1)
                    m.d.sync += [s.count.eq(0), s.over.eq(0)]
                with m.Else():
                    m.d.sync += [
                        s.attempts.eq(0),
                        s.strikes.eq(0),
                        s.wait.eq(0),
                        s.state.eq(PEND),
                    ]

    def _may_open(self, m, s: _Sender):
        """PEND: whether this cycle may open the connection, by ``retry`` (counting the
        back-off down)."""
        if self.retry == "immediate":
            return Const(1)
        if self.retry == "round":
            return self.go
        go = s.wait == 0
        with m.If(s.wait != 0):
            m.d.sync += s.wait.eq(s.wait - 1)
        return go

    def _await_status(self, m, s: _Sender, bk, inc: _Strobes, lfsr):
        """WAIT: CONNECTED ends the message; BLOCKED, or no status within ``timeout``, ends
        the attempt: back to PEND on the other output, or, at the ``GIVE_UP``-th timeout in a
        row, the message dropped."""
        with m.If(bk == word(0, CONNECTED)):
            m.d.comb += inc.sent.eq(1)
            m.d.sync += [s.count.eq(0), s.port.eq(~s.port), s.state.eq(LOAD)]
        with m.Elif((bk == word(0, BLOCKED)) | (s.age == self.timeout - 1)):
            blocked = bk == word(0, BLOCKED)
            m.d.comb += [inc.retry.eq(blocked), inc.timeout.eq(~blocked)]
            m.d.sync += [s.port.eq(~s.port), s.strikes.eq(Mux(blocked, 0, s.strikes + 1))]
            with m.If(s.attempts != BACKOFF_CAP):
                m.d.sync += s.attempts.eq(s.attempts + 1)
            with m.If(~blocked & (s.strikes == GIVE_UP - 1)):
                # Given up: the message is dropped.
                m.d.comb += inc.drop.eq(1)
                m.d.sync += [s.count.eq(0), s.state.eq(LOAD)]
            with m.Else():
                m.d.sync += s.state.eq(PEND)
                if self.retry == "backoff":
                    m.d.sync += s.wait.eq(self._backoff(m, s.attempts, lfsr))
        with m.Else():
            m.d.sync += s.age.eq(s.age + 1)

    @staticmethod
    def _backoff(m, attempts, lfsr):
        """``BACKOFF_SLOT * (x mod 2^min(attempts + 1, BACKOFF_CAP))``, x from the LFSR
        (:func:`fattree.spec.rn1_endpoint.backoff_cycles` of the ``attempts + 1``-th)."""
        mask = Signal(BACKOFF_CAP)
        for k in range(BACKOFF_CAP):
            with m.If(attempts == k):
                m.d.comb += mask.eq((1 << (k + 1)) - 1)
        with m.If(attempts == BACKOFF_CAP):
            m.d.comb += mask.eq((1 << BACKOFF_CAP) - 1)
        return (lfsr.value[:BACKOFF_CAP] & mask) * BACKOFF_SLOT

    def _receive(self, m):
        mb = self.max_bytes
        n = ENDPOINT_LINKS
        full = [Signal(name=f"full_{k}") for k in range(n)]
        bufs = [Signal(8 * mb, name=f"rbuf_{k}") for k in range(n)]
        lens = [Signal(range(mb + 1), name=f"rlen_{k}") for k in range(n)]
        got = [Signal(name=f"got_{k}") for k in range(n)]
        for k in range(n):
            f = self.i[k].fwd
            state = Signal(2, name=f"rstate_{k}")
            prev_ctrl = Signal(name=f"rprev_{k}")
            over = Signal(name=f"rover_{k}")
            bk = Value.cast(self.i[k].bk)
            m.d.sync += [prev_ctrl.eq(f.ctrl), bk.eq(0)]
            with m.Switch(state):
                with m.Case(R_IDLE):
                    with m.If(f.ctrl & ~prev_ctrl):
                        with m.If(full[k]):
                            m.d.sync += state.eq(R_DISCARD)
                        with m.Else():
                            m.d.sync += [state.eq(R_RECV), lens[k].eq(0), over.eq(0)]
                with m.Case(R_RECV):
                    with m.If(f.ctrl):
                        with m.If(lens[k] == mb):
                            m.d.sync += over.eq(1)
                        with m.Else():
                            m.d.sync += [
                                bufs[k].word_select(lens[k], 8).eq(f.data),
                                lens[k].eq(lens[k] + 1),
                            ]
                    with m.Else():
                        # The close. Too long (never from an RN1Endpoint of the same
                        # max_bytes) or empty: not taken, BLOCKED.
                        m.d.sync += state.eq(R_IDLE)
                        with m.If(over | (lens[k] == 0)):
                            m.d.sync += bk.eq(word(0, BLOCKED))
                        with m.Else():
                            m.d.comb += got[k].eq(1)
                            m.d.sync += [bk.eq(word(0, CONNECTED)), full[k].eq(1)]
                with m.Case(R_DISCARD):
                    with m.If(~f.ctrl):
                        m.d.sync += [state.eq(R_IDLE), bk.eq(word(0, BLOCKED))]
        _saturating_add(m, self.received, got[0] + got[1])

        # Out to the user: the buffer `sel` points at; `sel` moves on after a message's last
        # beat, and every cycle its buffer is empty.
        sel = Signal()
        idx = Signal(range(mb + 1))
        rx = self.rx
        cur_full = Mux(sel, full[1], full[0])
        m.d.comb += [
            rx.valid.eq(cur_full),
            rx.payload.data.eq(Mux(sel, bufs[1], bufs[0]).word_select(idx, 8)),
            rx.payload.last.eq(idx == Mux(sel, lens[1], lens[0]) - 1),
        ]
        with m.If(~cur_full):
            m.d.sync += sel.eq(~sel)
        with m.Elif(rx.ready):
            with m.If(rx.payload.last):
                m.d.sync += [idx.eq(0), sel.eq(~sel)]
                for k in range(n):
                    with m.If(sel == k):
                        m.d.sync += full[k].eq(0)
            with m.Else():
                m.d.sync += idx.eq(idx + 1)


def stream_members(endpoints: int) -> dict:
    """The members of a network with an endpoint per node: ``tx``, ``rx`` and the counters,
    one per endpoint."""
    n = endpoints
    return {
        "tx": In(tx_signature(n)).array(n),
        "rx": Out(rx_signature()).array(n),
        "sent": Out(COUNTER_BITS).array(n),
        "retries": Out(COUNTER_BITS).array(n),
        "received": Out(COUNTER_BITS).array(n),
        "dropped": Out(COUNTER_BITS).array(n),
        "timeouts": Out(COUNTER_BITS).array(n),
    }


def attach_endpoints(m, top, net, endpoints, dead_outputs=()) -> None:
    """Endpoint ``e`` of ``endpoints`` on ``net``'s channels ``2e``, ``2e + 1`` (its ``i`` and
    ``o``), its streams and counters on ``top``'s (:func:`stream_members`), and the rounds'
    ``go``: high one cycle after a cycle in which no endpoint had a transmission under way.
    Channels in ``dead_outputs`` are not connected from the endpoint's output into the network
    (both ends read the link as idle)."""
    go = Signal()
    in_flight = Const(0)
    for e, ep in enumerate(endpoints):
        m.submodules[f"ep_{e}"] = ep
        for k in range(ENDPOINT_LINKS):
            if ENDPOINT_LINKS * e + k not in dead_outputs:
                connect(m, ep.o[k], net.i[ENDPOINT_LINKS * e + k])
            connect(m, net.o[ENDPOINT_LINKS * e + k], ep.i[k])
        connect(m, flipped(top.tx[e]), ep.tx)
        connect(m, ep.rx, flipped(top.rx[e]))
        m.d.comb += [
            ep.go.eq(go),
            top.sent[e].eq(ep.sent),
            top.retries[e].eq(ep.retries),
            top.received[e].eq(ep.received),
            top.dropped[e].eq(ep.dropped),
            top.timeouts[e].eq(ep.timeouts),
        ]
        in_flight = in_flight | ep.busy
    m.d.sync += go.eq(~in_flight)
