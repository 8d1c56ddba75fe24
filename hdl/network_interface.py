"""Network interface of a processing node on the circuit-switched fat tree (Strumpen and
Krishnamurthy 2005, sections 3 and 7).

One transmission and one reception at a time. A message is ``length`` data words of
``width`` bits for node ``tx.payload.dest``. The interface sends the route (one word per
router: ``L`` zeros up, a one to turn at level ``L``, then the destination bits ``L - 1 .. 0``
down, each in bit 0 of its word) followed by the data words, one word per cycle, then drops
``valid`` and waits for the acknowledge or a reject (which may arrive while it is still
sending: it stops).

Retry strategies (``retry``):

* ``"immediate"``: the message starts again one idle cycle after the reject arrives.
* ``"round"``: it starts again when the global ``go`` input is high (the network raises it
  when no interface has a message in flight: delivery rounds as in the paper's proof).
* ``"backoff"``: binary exponential back-off: after the ``k``-th reject in a row it waits
  ``4 * (x mod 2^min(k, 8))`` cycles, ``x`` from the interface's 16-bit LFSR.

Sending and receiving are ``amaranth.lib.stream`` ports, one beat per whole message: ``tx``
(payload ``dest``, ``data``) and ``rx`` (payload ``data``), word 0 in the low bits of
``data``.

Receiving: data words are collected while ``valid`` is high on the eject link; when it falls,
the message is stored in the ``rx`` stream (``rx.valid`` high, held until ``rx.ready``) and
``ack`` goes back (both registered: one cycle later). A message whose first word arrives
while ``rx`` still holds an undelivered message that is not taken in that cycle is
**rejected** (``reject`` on the eject link one cycle later, as a router rejects): the circuit
is released and the sender retries by its strategy. The rest of that burst is ignored.
"""

from dataclasses import dataclass

from amaranth import C, Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..params import check_int_range, check_positive_int, check_power_of_two
from ..spec.circuit import (
    BACKOFF_CAP,
    BACKOFF_SLOT,
    LFSR_WIDTH,
    check_retry,
    rx_fields,
    tx_fields,
)
from ._validation import validates_parameters
from .circuit_router import link_signature
from .lfsr import LFSR

__all__ = ["NetworkInterface", "tx_layout", "rx_layout", "tx_signature", "rx_signature"]


def tx_layout(leaves: int, width: int, length: int) -> data.StructLayout:
    """Transmit beat: ``dest``, ``data`` (:func:`fattree.spec.circuit.tx_fields`)."""
    return data.StructLayout(tx_fields(leaves, width, length))


def rx_layout(width: int, length: int) -> data.StructLayout:
    """Receive beat: ``data`` (:func:`fattree.spec.circuit.rx_fields`)."""
    return data.StructLayout(rx_fields(width, length))


def tx_signature(leaves: int, width: int, length: int) -> stream.Signature:
    """The transmit stream, from the sender's side: one beat is one whole message."""
    return stream.Signature(tx_layout(leaves, width, length))


def rx_signature(width: int, length: int) -> stream.Signature:
    """The receive stream, from the interface's side: one beat is one whole message."""
    return stream.Signature(rx_layout(width, length))


# States.
IDLE, PEND, SEND, WAIT = 0, 1, 2, 3


@dataclass(frozen=True)
class _SendRegisters:
    """The registers of a :class:`NetworkInterface`'s sending side."""

    state: Signal
    message: Signal
    target: Signal
    first: Signal
    last: Signal
    left: Signal
    attempts: Signal
    wait: Signal


class NetworkInterface(wiring.Component):
    """Send and receive for node ``node`` of a ``leaves``-node circuit fat tree.

    Parameters
    ----------
    node : int or None
        This node's number, ``0 .. leaves - 1``; ``None``: the ``node`` input gives it (a
        tree's interfaces then differ in nothing but what the tree connects to them, and are
        one Verilog module).
    leaves : int
        Nodes in the network, a power of two, at least 2.
    width : int
        Data wires per link direction, at least 1.
    length : int
        Data words per message, at least 1.
    retry : str or int
        ``"immediate"`` (0), ``"round"`` (1) or ``"backoff"`` (2).
    seed : int or None
        Seed of the back-off LFSR, ``1 .. 65535``; ``None``: no LFSR here, the ``lfsr`` input
        is its state (a tree holds each interface's LFSR beside it, for the same reason).

    Attributes
    ----------
    up : Out(link_signature(width))
        The inject link, to the leaf router.
    down : In(link_signature(width))
        The eject link, from the leaf router.
    tx : In(tx_signature(leaves, width, length))
        A message to send, ``payload.dest`` and ``payload.data`` (taken when both valid and
        ready are high).
    tx_done : Out(1)
        Pulses when the acknowledge of the message arrives.
    tx_reject : Out(1)
        Pulses when a reject arrives (the message will be retried).
    rx : Out(rx_signature(width, length))
        A received message, ``payload.data``, held until ``ready``.
    go : In(1)
        Round start, for ``retry="round"``.
    busy : Out(1)
        A transmission is in flight (sent, not yet acknowledged or rejected).
    node : In(lg leaves)
        With ``node=None``: this node's number.
    lfsr : In(16)
        With ``seed=None`` and ``retry="backoff"``: the back-off LFSR's state.
    """

    @validates_parameters
    def __init__(self, node, leaves, width=1, length=1, retry="immediate", seed=1):
        self.leaves = check_power_of_two("leaves", leaves, 2)
        if node is not None:
            node = check_int_range("node", node, 0, leaves - 1)
        self.width = check_positive_int("width", width)
        self.length = check_positive_int("length", length)
        self.retry = check_retry(retry)
        if seed is not None:
            seed = check_int_range("seed", seed, 1, (1 << LFSR_WIDTH) - 1)
        self.seed = seed
        self.h = leaves.bit_length() - 1
        link = link_signature(width)
        members = {
            "up": Out(link),
            "down": In(link),
            "tx": In(tx_signature(leaves, width, length)),
            "tx_done": Out(1),
            "tx_reject": Out(1),
            "rx": Out(rx_signature(width, length)),
            "go": In(1),
            "busy": Out(1),
        }
        if node is None:
            members["node"] = In(self.h)
        if seed is None and self.retry == "backoff":
            members["lfsr"] = In(LFSR_WIDTH)
        super().__init__(members)
        if node is not None:
            self.node = node

    def elaborate(self, platform):
        m = Module()
        send = self._send_registers()
        m.d.comb += [
            self.tx.ready.eq(send.state == IDLE),
            self.busy.eq((send.state == SEND) | (send.state == WAIT)),
        ]
        offered, offered_last, diff = self._offered_route(m)
        lfsr = None
        if self.retry == "backoff":
            if self.seed is None:
                lfsr = self.lfsr
            else:
                m.submodules.lfsr = own = LFSR(LFSR_WIDTH, seed=self.seed)
                lfsr = own.value
        start = self._drive_inject_link(m, send)

        m.d.sync += [self.tx_done.eq(0), self.tx_reject.eq(0)]
        state, left, attempts, wait = send.state, send.left, send.attempts, send.wait
        with m.Switch(state):
            with m.Case(IDLE):
                with m.If(self.tx.valid):
                    m.d.sync += [
                        send.message.eq(self.tx.payload.data),
                        send.target.eq(offered),
                        send.first.eq(diff == 1),
                        send.last.eq(offered_last),
                        attempts.eq(0),
                        wait.eq(0),
                        state.eq(PEND),
                    ]
            with m.Case(PEND):
                if self.retry == "immediate":
                    go = 1
                elif self.retry == "round":
                    go = self.go
                else:
                    go = wait == 0
                    with m.If(wait != 0):
                        m.d.sync += wait.eq(wait - 1)
                with m.If(go):
                    m.d.comb += start.eq(1)
                    m.d.sync += [left.eq(send.last), state.eq(SEND)]
            with m.Case(SEND, WAIT):
                with m.If(self.up.reject):
                    m.d.sync += [self.tx_reject.eq(1), state.eq(PEND)]
                    with m.If(attempts != BACKOFF_CAP):
                        m.d.sync += attempts.eq(attempts + 1)
                    if self.retry == "backoff":
                        m.d.sync += wait.eq(self._backoff(m, attempts, lfsr))
                with m.Elif((state == WAIT) & self.up.ack):
                    m.d.sync += [self.tx_done.eq(1), state.eq(IDLE)]
                with m.Elif(state == SEND):
                    with m.If(left != 0):
                        m.d.sync += left.eq(left - 1)
                    with m.Else():
                        m.d.sync += state.eq(WAIT)
        self._receive(m)
        return m

    def _send_registers(self) -> _SendRegisters:
        """The sending side's state: the message taken, its route, the retry counters."""
        h, width, length = self.h, self.width, self.length
        state = Signal(2)
        message = Signal(width * length)
        # The route, reversed: word 2L - e of the route is bit e of `target`, which is the
        # destination's low L bits with a 1 above them (L zeros up, the turn, the bits
        # down); bits above L are the zeros of the way up.
        target = Signal(h)
        first = Signal()  # route word 0: 1 when the message turns at the leaf router (L = 0)
        last = Signal(range(2 * h + length + 1))  # index of the last word: 2L + length
        # Words still to send after the current one; the next word's number is last - left
        # + 1, so `left` indexes `words` below directly, and 0 means the message is out.
        left = Signal(range(2 * h + length + 1))
        attempts = Signal(range(BACKOFF_CAP + 1))
        wait = Signal(BACKOFF_SLOT.bit_length() + BACKOFF_CAP + 1)
        return _SendRegisters(state, message, target, first, last, left, attempts, wait)

    def _offered_route(self, m):
        """The route of the offered message, for every possible turn level: ``(offered,
        offered_last, diff)``, its ``target`` and ``last`` (see :meth:`_send_registers`) and
        the destination XOR this node."""
        h, length = self.h, self.length
        offered = Signal(h)
        offered_last = Signal(range(2 * h + length + 1))
        diff = Signal(max(h, 1))
        m.d.comb += diff.eq(self.tx.payload.dest ^ self.node)
        for level in range(h):
            with m.If((diff >> level) == 1):
                m.d.comb += offered_last.eq(2 * level + length)
                m.d.comb += offered.eq(Cat(self.tx.payload.dest[:level], 1))
        return offered, offered_last, diff

    def _drive_inject_link(self, m, send: _SendRegisters):
        """The inject link's registers as plain next-state functions, not in the state
        machine: every state but SEND, and the cycle that starts an attempt, leaves them at
        0. Route word 0 when an attempt starts, then, in SEND and not rejected, the word
        ``left`` points to (0 once the message is out). Bits above bit 0 carry only data
        words: one LUT each (an AND-OR of the message bits), the Mux becoming their
        flip-flops' synchronous reset. Returns ``start``, which the state machine raises when
        an attempt starts."""
        h, width, length = self.h, self.width, self.length
        message, left = send.message, send.left
        # The word sent when `left` words remain: data word length - left for left = 1 ..
        # length, route word last - left + 1 (bit left - length - 1 of `target`) above.
        route_words = [Cat(send.target[e], C(0, width - 1)) for e in range(h)]
        route_words += [C(0, width)] * (h - 1)  # the zeros of the way up, above L
        words = Cat(
            C(0, width),
            *[message.word_select(length - k, width) for k in range(1, length + 1)],
            *route_words,
        )
        word = Signal(width)
        m.d.comb += word.eq(words.word_select(left, width))
        start = Signal()  # PEND, and the retry strategy lets the attempt start
        sending = Signal()
        m.d.comb += sending.eq((send.state == SEND) & ~self.up.reject)
        m.d.sync += [
            self.up.valid.eq(start | (sending & (left != 0))),
            self.up.data[0].eq(Mux(sending, word[0], start & send.first)),
        ]
        if width > 1:
            high = 0
            for k in range(1, length + 1):
                at = Signal(name=f"at_word{k}")
                m.d.comb += at.eq(left == k)
                high = high | (message.word_select(length - k, width) & at.replicate(width))
            m.d.sync += self.up.data[1:].eq(Mux(sending, high[1:], 0))
        return start

    @staticmethod
    def _backoff(m, attempts, lfsr):
        """Cycles to wait after the reject that ends attempt ``attempts`` (counted from 0):
        ``BACKOFF_SLOT * (x mod 2^min(attempts + 1, BACKOFF_CAP))``, x from the LFSR's state
        ``lfsr``."""
        exp = Signal(range(BACKOFF_CAP + 1))
        m.d.comb += exp.eq(attempts + (attempts != BACKOFF_CAP))
        mask = Signal(BACKOFF_CAP)
        for k in range(1, BACKOFF_CAP + 1):
            with m.If(exp == k):
                m.d.comb += mask.eq((1 << k) - 1)
        return (lfsr[:BACKOFF_CAP] & mask) * BACKOFF_SLOT

    def _receive(self, m):
        """Collect the words of the eject link; when valid falls, store the message in ``rx``
        and acknowledge. Reject a message whose first word comes while ``rx`` stays full."""
        width, length = self.width, self.length
        was_valid = Signal()
        dead = Signal()  # the message on the eject link was rejected: ignore it
        buffer = Signal(width * length)
        rx = self.rx
        full = rx.valid & ~rx.ready  # still holds an undelivered message after this cycle
        m.d.sync += [was_valid.eq(self.down.valid), self.down.ack.eq(0), self.down.reject.eq(0)]
        with m.If(rx.ready):
            m.d.sync += rx.valid.eq(0)
        with m.If(self.down.valid):
            if length == 1:
                m.d.sync += buffer.eq(self.down.data)
            else:
                m.d.sync += buffer.eq(Cat(buffer[width:], self.down.data))
            with m.If(~was_valid & full):
                m.d.sync += [self.down.reject.eq(1), dead.eq(1)]
        with m.Else():
            m.d.sync += dead.eq(0)
            with m.If(was_valid & ~dead):
                m.d.sync += [rx.valid.eq(1), rx.payload.data.eq(buffer), self.down.ack.eq(1)]
