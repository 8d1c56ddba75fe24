"""Network interface of a processing node on the circuit-switched fat tree (Strumpen and
Krishnamurthy 2005, sections 3 and 7).

One transmission and one reception at a time. A message is ``length`` data words of
``width`` bits for node ``tx_dest``. The interface sends the route (one word per router: ``L``
zeros up, a one to turn at level ``L``, then the destination bits ``L - 1 .. 0`` down, each in
bit 0 of its word) followed by the data words, one word per cycle, then drops ``valid`` and
waits for the acknowledge or a reject (which may arrive while it is still sending: it stops).

Retry strategies (``retry``):

* ``"immediate"``: the message starts again one idle cycle after the reject arrives.
* ``"round"``: it starts again when the global ``go`` input is high (the network raises it
  when no interface has a message in flight: delivery rounds as in the paper's proof).
* ``"backoff"``: binary exponential back-off: after the ``k``-th reject in a row it waits
  ``4 * (x mod 2^min(k, 8))`` cycles, ``x`` from the interface's 16-bit LFSR.

Receiving: data words are collected while ``valid`` is high on the eject link; when it falls,
``rx_valid`` pulses with the message in ``rx_data`` (word 0 in the low bits) and ``ack`` goes
back (both registered: one cycle later).
"""

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..params import check_int_range, check_positive_int, check_power_of_two
from ._validation import validates_parameters
from .circuit_router import LFSR_WIDTH, link_signature

__all__ = ["RETRY", "NetworkInterface", "check_retry"]

#: Retry strategies, by name and by the integer code the command line uses.
RETRY = ("immediate", "round", "backoff")
BACKOFF_CAP = 8
BACKOFF_SLOT = 4

# States.
IDLE, PEND, SEND, WAIT = 0, 1, 2, 3


def check_retry(retry) -> str:
    """``"immediate"``/``"round"``/``"backoff"`` or their codes 0/1/2 -> the name."""
    if isinstance(retry, int) and not isinstance(retry, bool) and 0 <= retry < len(RETRY):
        return RETRY[retry]
    if retry in RETRY:
        return retry
    raise ValueError(
        f"retry must be one of 'immediate', 'round', 'backoff' (or 0, 1, 2), not {retry!r}"
    )


def route_bits(node: int, dest: int) -> list[int]:
    """The route words' bit 0 for a message from ``node`` to ``dest`` (``node != dest``)."""
    level = (node ^ dest).bit_length() - 1
    return [0] * level + [1] + [(dest >> v) & 1 for v in reversed(range(level))]


class NetworkInterface(wiring.Component):
    """Send and receive for node ``node`` of a ``leaves``-node circuit fat tree.

    Parameters
    ----------
    node : int
        This node's number, ``0 .. leaves - 1``.
    leaves : int
        Nodes in the network, a power of two, at least 2.
    width : int
        Data wires per link direction, at least 1.
    length : int
        Data words per message, at least 1.
    retry : str or int
        ``"immediate"`` (0), ``"round"`` (1) or ``"backoff"`` (2).
    seed : int
        Seed of the back-off LFSR, ``1 .. 65535``.

    Attributes
    ----------
    up : Out(link_signature(width))
        The inject link, to the leaf router.
    down : In(link_signature(width))
        The eject link, from the leaf router.
    tx_valid, tx_ready, tx_dest, tx_data
        A message to send (taken when both valid and ready are high).
    tx_done : Out(1)
        Pulses when the acknowledge of the message arrives.
    tx_reject : Out(1)
        Pulses when a reject arrives (the message will be retried).
    rx_valid, rx_data
        A received message (one-cycle pulse).
    go : In(1)
        Round start, for ``retry="round"``.
    busy : Out(1)
        A transmission is in flight (sent, not yet acknowledged or rejected).
    """

    @validates_parameters
    def __init__(self, node, leaves, width=1, length=1, retry="immediate", seed=1):
        self.leaves = check_power_of_two("leaves", leaves, 2)
        self.node = check_int_range("node", node, 0, leaves - 1)
        self.width = check_positive_int("width", width)
        self.length = check_positive_int("length", length)
        self.retry = check_retry(retry)
        self.seed = check_int_range("seed", seed, 1, (1 << LFSR_WIDTH) - 1)
        self.h = leaves.bit_length() - 1
        link = link_signature(width)
        super().__init__(
            {
                "up": Out(link),
                "down": In(link),
                "tx_valid": In(1),
                "tx_ready": Out(1),
                "tx_dest": In(self.h),
                "tx_data": In(width * length),
                "tx_done": Out(1),
                "tx_reject": Out(1),
                "rx_valid": Out(1),
                "rx_data": Out(width * length),
                "go": In(1),
                "busy": Out(1),
            }
        )

    def elaborate(self, platform):
        from ..boards.lfsr import LFSR

        m = Module()
        h, width, length = self.h, self.width, self.length
        state = Signal(2)
        data = Signal(width * length)
        route = Signal(2 * h - 1)  # route bit of word j in bit j
        last = Signal(range(2 * h + length + 1))  # index of the last word: 2L + length
        index = Signal(range(2 * h + length + 1))
        attempts = Signal(range(BACKOFF_CAP + 1))
        wait = Signal(BACKOFF_SLOT.bit_length() + BACKOFF_CAP + 1)

        m.d.comb += [
            self.tx_ready.eq(state == IDLE),
            self.busy.eq((state == SEND) | (state == WAIT)),
        ]

        # Route bits of the offered message, for every possible turn level.
        offered = Signal.like(route)
        offered_last = Signal.like(last)
        diff = Signal(max(h, 1))
        m.d.comb += diff.eq(self.tx_dest ^ self.node)
        for level in range(h):
            bits = [0] * level + [1]
            with m.If((diff >> level) == 1):
                m.d.comb += offered_last.eq(2 * level + length)
                value = Cat(
                    *[int(b) for b in bits], *[self.tx_dest[v] for v in reversed(range(level))]
                )
                m.d.comb += offered.eq(value)

        if self.retry == "backoff":
            m.submodules.lfsr = lfsr = LFSR(LFSR_WIDTH, seed=self.seed)

        # The word on the inject link next cycle, for word `index`.
        def load_word(j):
            word = Signal(width, name="word")
            if length > 1:
                which = Signal(range(length), name="which")
                m.d.comb += which.eq(j - (last - length + 1))
                payload = data.word_select(which, width)
            else:
                payload = data
            with m.If(j <= last - length):
                m.d.comb += word.eq(route.bit_select(j, 1))
            with m.Else():
                m.d.comb += word.eq(payload)
            return [self.up.valid.eq(1), self.up.data.eq(word)]

        m.d.sync += [self.tx_done.eq(0), self.tx_reject.eq(0)]
        rejected = self.up.reject
        with m.Switch(state):
            with m.Case(IDLE):
                with m.If(self.tx_valid):
                    m.d.sync += [
                        data.eq(self.tx_data),
                        route.eq(offered),
                        last.eq(offered_last),
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
                    m.d.sync += load_word(0)
                    m.d.sync += [index.eq(1), state.eq(SEND)]
            with m.Case(SEND, WAIT):
                with m.If(rejected):
                    m.d.sync += [
                        self.up.valid.eq(0),
                        self.up.data.eq(0),
                        self.tx_reject.eq(1),
                        state.eq(PEND),
                    ]
                    with m.If(attempts != BACKOFF_CAP):
                        m.d.sync += attempts.eq(attempts + 1)
                    if self.retry == "backoff":
                        exp = Signal(range(BACKOFF_CAP + 1))
                        m.d.comb += exp.eq(attempts + (attempts != BACKOFF_CAP))
                        mask = Signal(BACKOFF_CAP)
                        for k in range(1, BACKOFF_CAP + 1):
                            with m.If(exp == k):
                                m.d.comb += mask.eq((1 << k) - 1)
                        m.d.sync += wait.eq((lfsr.value[:BACKOFF_CAP] & mask) * BACKOFF_SLOT)
                with m.Elif((state == WAIT) & self.up.ack):
                    m.d.sync += [self.tx_done.eq(1), state.eq(IDLE)]
                with m.Elif(state == SEND):
                    with m.If(index <= last):
                        m.d.sync += load_word(index)
                        m.d.sync += index.eq(index + 1)
                    with m.Else():
                        m.d.sync += [self.up.valid.eq(0), self.up.data.eq(0), state.eq(WAIT)]

        # Receive.
        was_valid = Signal()
        buffer = Signal(width * length)
        m.d.sync += [was_valid.eq(self.down.valid), self.rx_valid.eq(0), self.down.ack.eq(0)]
        m.d.comb += self.down.reject.eq(0)
        with m.If(self.down.valid):
            if length == 1:
                m.d.sync += buffer.eq(self.down.data)
            else:
                m.d.sync += buffer.eq(Cat(buffer[width:], self.down.data))
        with m.Elif(was_valid):
            m.d.sync += [self.rx_valid.eq(1), self.rx_data.eq(buffer), self.down.ack.eq(1)]
        return m
