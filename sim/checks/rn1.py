"""One RN1 router, or a network of them, against its cycle-exact model, in lock step, driven
by protocol-following endpoints.

An endpoint sits on every channel: a *sender* on each input channel (it opens connections:
head, bytes, a TURN or DROP close, then waits for the status) and a *receiver* on each
output channel (it reads a transmission and answers its close with CONNECTED, or now and
then BLOCKED as a busy destination would; after a TURN it answers over the same connection
and may turn it again). Both ends of a connection run the same :class:`End` machine, so
turns may go back and forth. A blocked transmission is sent again (same bytes, after a
random gap) until it gets through. A :class:`Layout` says how heads name targets and which
outputs serve them: :func:`router_layout` for one RN1, :func:`bidelta_layout` for the
bidelta network.

Two checks run side by side:

* ``cycle_mismatches``: every output word of the router (``o_fwd`` on each output channel,
  ``i_bk`` on each input channel's backward link) against the cycle-exact model;
* ``message_mismatches``: every transmission queued is delivered exactly once, through an
  output that serves the target its head names (for one router: the direction, and the
  crossbar in the alternate mode; for a network: the destination endpoint), with its bytes
  intact (the head as the routers pass it on); every segment sent after a turn arrives
  intact at the other end; every status the senders wait for comes.

``read()`` gives ``(o_fwd, i_bk)`` (lists of words, one per channel), ``drive(i_fwd,
o_bk)`` sets the inputs, ``tick()`` waits one cycle. The endpoints react to what the design
shows, so a mismatch shows up in both checks.
"""

from __future__ import annotations

import copy
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ...spec.rn1 import (
    BLOCKED,
    CHANNELS,
    CONNECTED,
    DIRECTIONS,
    DROP,
    RUNTIME,
    STATUS,
    TURN,
    ctrl_of,
    data_of,
    head_for,
    outputs_for,
    pass_head,
    word,
)
from ...spec.rn1_bidelta import ENDPOINT_LINKS, Bidelta
from ...spec.rn1_tree import SUBTREES, UnitTree
from ..coverage import closing_rounds
from ..models.rn1 import RN1Model
from ..scoreboard import Scoreboard

__all__ = [
    "OUTPUTS",
    "INPUTS",
    "CHECKS",
    "PATTERNS",
    "Knobs",
    "Layout",
    "router_layout",
    "bidelta_layout",
    "unit_tree_layout",
    "End",
    "RN1Check",
    "transmissions",
    "burst",
    "BURST",
    "simulate_network",
    "unpass_head",
    "network_queues",
    "run_network_traffic",
    "delivered_by_node",
    "TOP",
    "level_pairs",
    "network_phase",
    "STEER",
    "hole_rounds",
    "network_hole_rounds",
]

OUTPUTS = ("o_fwd", "i_bk")
INPUTS = ("i_fwd", "o_bk")
CHECKS = ("cycle_mismatches", "message_mismatches")
PATTERNS = ("random", "hotspot")

IDLE, SEND, WAIT_STATUS, LISTEN, ANSWER = range(5)


@dataclass(frozen=True)
class Knobs:
    """How the endpoints behave: per cycle, probability that an idle sender starts
    (``start``); bytes per segment ``1 .. max_bytes``; probability that a segment closes
    with TURN (``turn``, at most ``max_turns`` per connection); probability that a
    receiver answers a connection's first segment BLOCKED (``busy``); status answers come
    ``0 .. max_delay`` cycles after the close; a blocked transmission is sent again ``0 ..
    max_gap`` cycles after its status; ``noise``: see below."""

    start: float = 0.3
    max_bytes: int = 6
    turn: float = 0.4
    max_turns: int = 3
    busy: float = 0.1
    max_delay: int = 2
    max_gap: int = 3
    #: Idle words (``ctrl`` 0, neither a close nor a status) carry random data, not 0, while
    #: the end is busy: the protocol gives them no meaning, so the router must ignore it.
    noise: bool = False
    #: Senders start only when every end is idle and every link quiet, so each round's heads
    #: (one per input with something to send) reach the router in the same cycle, onto a
    #: router with every output free.
    rounds: bool = False
    #: Probability that a byte of a segment after a turn is one of the codes (0 .. 3: DROP,
    #: TURN, CONNECTED, BLOCKED): a byte (``ctrl`` 1) is data whatever its value, and a router
    #: that read it as a close or a status would drop the circuit.
    codes: float = 0.0
    #: Probability that an end answers a segment after a turn BLOCKED (the first sender
    #: refusing the reply): the connection ends, the segment is lost, nothing is sent again.
    refuse: float = 0.0


#: Endpoints that keep in step (see :func:`burst`): every idle sender starts at once, and
#: answers and retries come without a delay, so heads meet in the same cycle.
BURST = Knobs(start=1.0, turn=0.0, busy=0.0, max_delay=0, max_gap=0)


def unpass_head(head: int) -> int:
    """Inverse of :func:`fattree.spec.rn1.pass_head`: the head as its sender wrote it."""
    return ((head << 2) | (head >> 6)) & 0xFF


@dataclass(frozen=True)
class Layout:
    """What the check needs to know of the design around the endpoints: its ``channels``
    (input and output channels alike), the ``targets`` a head can name, ``head(input,
    target, fill)`` the head byte a sender on ``input`` writes for a target (other bits from
    ``fill``; None if that sender cannot reach it), ``tx_key(input, head)`` and
    ``out_key(output)`` (equal when a transmission sent on ``input`` may leave by
    ``output``), and ``arrive(input, head)`` (the head as the routers pass it on to the
    receiver)."""

    channels: int
    targets: int
    head: Callable[[int, int, int], int | None]
    tx_key: Callable[[int, int], tuple]
    out_key: Callable[[int], tuple]
    arrive: Callable[[int, int], int]


def _passed(times: int, head: int) -> int:
    for _ in range(times):
        head = pass_head(head)
    return head


def router_layout(mode: str) -> Layout:
    """One RN1: targets are directions; an output serves (crossbar, direction)."""

    def group(i: int) -> int:
        return i // DIRECTIONS if mode == "alternate" else 0

    out = {}
    for i in range(CHANNELS):
        for d in range(DIRECTIONS):
            for o in outputs_for(mode, i, d):
                out[o] = (group(i), d)
    return Layout(
        CHANNELS,
        DIRECTIONS,
        lambda i, d, fill: (fill & ~0b11) | d,
        lambda i, head: (group(i), head & 0b11),
        out.__getitem__,
        lambda i, head: pass_head(head),
    )


def bidelta_layout(net: Bidelta) -> Layout:
    """A bidelta network: targets are endpoints; channel ``2e + k`` is endpoint ``e``'s."""
    return Layout(
        ENDPOINT_LINKS * net.endpoints,
        net.endpoints,
        lambda i, dest, fill: net.head(dest, fill),
        lambda i, head: (net.destination(head),),
        lambda o: (o // ENDPOINT_LINKS,),
        lambda i, head: _passed(net.stages, head),
    )


def unit_tree_layout(tree: UnitTree) -> Layout:
    """A unit tree on its own: channels are the subtrees' links (``w`` per subtree), then
    the top links; targets are the 64 subtrees and 64 = out of the top."""
    w, top = tree.width, SUBTREES

    def source(i):
        return i // w if i < SUBTREES * w else None

    def head(i, target, fill):
        src, dest = source(i), (None if target == top else target)
        if src == dest or (src is None and dest is None):
            return None
        return head_for(tree.route(src, dest), fill)

    def tx_key(i, h):
        return (tree.destination(source(i), h),)

    def arrive(i, h):
        dest = tree.destination(source(i), h)
        return _passed(len(tree.route(source(i), dest)), h)

    return Layout(
        len(tree.inputs()),
        top + 1,
        head,
        tx_key,
        lambda o: (o // w if o < SUBTREES * w else None,),
        arrive,
    )


def transmissions(
    pattern: str, count: int, rng: random.Random, layout: Layout | None = None
) -> list[list[list[int]]]:
    """Per input channel, ``count`` transmissions (byte lists, the head first): to
    ``random`` targets (of those the input can reach), or ``hotspot`` (every transmission to
    target 0, or 1 from where 0 cannot be reached). ``layout``: the design's (default: one
    RN1, targets are directions)."""
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {', '.join(PATTERNS)}, not {pattern!r}")
    layout = layout or router_layout("primary")
    queues = []
    for i in range(layout.channels):
        queue = []
        for _ in range(count):
            fill = rng.getrandbits(8)
            if pattern == "random":
                head = None
                while head is None:
                    head = layout.head(i, rng.randrange(layout.targets), fill)
            else:
                head = layout.head(i, 0, fill)
                head = head if head is not None else layout.head(i, 1, fill)
            queue.append([head] + [rng.getrandbits(8) for _ in range(rng.randint(0, 5))])
        queues.append(queue)
    return queues


def burst(
    count: int,
    rng: random.Random,
    layout: Layout | None = None,
    *,
    spread: int | None = None,
    max_length: int = 5,
) -> list[list[list[int]]]:
    """Per input channel, ``count`` transmissions to random targets, in rounds: the ``k``-th
    transmission of every input has the same length (``0 .. max_length`` bytes after the
    head), so endpoints that keep in step (:data:`BURST`, or :attr:`Knobs.rounds`) send their
    heads in the same cycle, round after round, and up to eight heads meet in one cycle
    (arbitration among three or more requests for a direction; only the first two of a
    direction get an output in the primary mode). ``spread``: each round's targets are drawn
    from that many (random) ones, so more heads ask for the same one."""
    layout = layout or router_layout("primary")
    queues = [[] for _ in range(layout.channels)]
    for _ in range(count):
        length = rng.randint(0, max_length)
        targets = rng.sample(range(layout.targets), spread or layout.targets)
        for i, queue in enumerate(queues):
            head = None
            while head is None:
                head = layout.head(i, rng.choice(targets), rng.getrandbits(8))
            queue.append([head] + [rng.getrandbits(8) for _ in range(length)])
    return queues


#: The data an idle word may carry (:attr:`Knobs.noise`): anything but a status code; and a
#: close that ends a connection: anything but TURN or a status code.
_NOISE = tuple(x for x in range(256) if x not in STATUS)
_DROPS = tuple(x for x in _NOISE if x != TURN)


class End:
    """One endpoint of a channel: drives one link and reads the other, each cycle.

    ``sender`` ends open connections from their ``queue``; receiver ends wait for them. After
    a turn both behave alike. Confirmed segments are appended to ``sent`` (by the end that
    got CONNECTED) and ``received`` (by the end that answered CONNECTED), as byte tuples;
    the first segment of a connection is tagged ``"first"``, the others ``"turn"``.
    """

    def __init__(self, sender: bool, rng: random.Random, knobs: Knobs, queue=None):
        self.sender = sender
        self.rng = rng
        self.knobs = knobs
        self.queue = list(queue or [])
        self.state = IDLE if sender else LISTEN
        self.words: list[int] = []  # to send, close word last
        self.close = DROP
        self.first = True  # the segment under way is the connection's first
        self.turns = 0
        self.segment: list[int] = []
        self.prev_in_ctrl = 0
        self.prev_out_ctrl = 0
        self.hold = False  # set by the check: wait for the next round (Knobs.rounds)
        self.answer_in = 0
        self.answer = CONNECTED
        self.answer_turn = False
        self.wait = 0
        self.waited = 0
        self.gap = 0
        self.sent: list[tuple] = []
        self.received: list[tuple] = []
        self.blocked = 0
        self.opened = 0

    @property
    def quiet(self) -> bool:
        """Nothing to send and nothing under way."""
        idle = IDLE if self.sender else LISTEN
        return self.state == idle and not self.queue and not self.segment

    def _start_segment(self, data: list[int]) -> None:
        self.close = (
            TURN
            if self.turns < self.knobs.max_turns and self.rng.random() < self.knobs.turn
            else DROP
        )
        self.words = [word(1, b) for b in data] + [word(0, self.close)]
        self.out_bytes = list(data)
        self.state = SEND

    def _random_bytes(self) -> list[int]:
        count = self.rng.randint(1, self.knobs.max_bytes)
        if not self.knobs.codes:
            return [self.rng.getrandbits(8) for _ in range(count)]
        return [
            self.rng.randrange(4)
            if self.rng.random() < self.knobs.codes
            else self.rng.getrandbits(8)
            for _ in range(count)
        ]

    def _done(self) -> None:
        self.state = IDLE if self.sender else LISTEN
        self.first, self.turns, self.segment = True, 0, []

    def step(self, incoming: int) -> int:
        """React to ``incoming`` (the word this end sees this cycle); the word it drives."""
        out = self._step(incoming)
        if out == 0 and self.knobs.noise and not self.quiet:
            # A close (the word after a byte) that ends the connection may say so with any
            # code but TURN, an idle word with any but a status code.
            out = word(0, self.rng.choice(_DROPS if self.prev_out_ctrl else _NOISE))
        self.prev_out_ctrl = ctrl_of(out)
        return out

    def _step(self, incoming: int) -> int:
        ctrl, code = ctrl_of(incoming), data_of(incoming)
        close_in = not ctrl and self.prev_in_ctrl
        self.prev_in_ctrl = ctrl
        out = 0
        if self.state == WAIT_STATUS:
            self.waited += 1
            if not ctrl and code in STATUS:
                self.waited = 0
                tag = "first" if self.first else "turn"
                if code == BLOCKED:
                    self.blocked += 1
                    if self.sender and self.first:
                        self.queue.insert(0, self.out_bytes)
                        self.gap = self.rng.randint(0, self.knobs.max_gap)
                    self._done()
                else:
                    self.sent.append((tag, tuple(self.out_bytes)))
                    if self.close == TURN:
                        self.turns += 1
                        self.first = False
                        self.state = LISTEN
                    else:
                        self._done()
        elif self.state == LISTEN:
            if ctrl:
                self.segment.append(code)
            elif close_in:
                busy = not self.sender and self.first and self.rng.random() < self.knobs.busy
                refuse = self.knobs.refuse
                busy = busy or (not self.first and refuse and self.rng.random() < refuse)
                self.answer = BLOCKED if busy else CONNECTED
                self.answer_turn = code == TURN
                self.wait = self.rng.randint(0, self.knobs.max_delay)
                self.state = ANSWER
        if self.state == ANSWER:
            if self.wait:
                self.wait -= 1
                return 0
            out = word(0, self.answer)
            if self.answer == CONNECTED:
                self.received.append(("first" if self.first else "turn", tuple(self.segment)))
            self.segment = []
            if self.answer == CONNECTED and self.answer_turn:
                self.turns += 1
                self.first = False
                self._start_segment(self._random_bytes())
            else:
                self._done()
            return out
        if self.state == IDLE and self.queue and not self.hold:
            if self.gap:
                self.gap -= 1
            elif self.rng.random() < self.knobs.start:
                self.opened += 1
                self._start_segment(self.queue.pop(0))
        if self.state == SEND:
            out = self.words.pop(0)
            if not self.words:
                self.state = WAIT_STATUS
                self.waited = 0
        return out


class RN1Check:
    """Drives phases of transmissions into one RN1 router and checks it against ``model``
    (see the module's description). :attr:`cycle` counts cycles over every phase."""

    #: Once a check has failed, cycles without a confirmed segment after which a phase ends;
    #: a phase also ends this many cycles after its own first mismatch.
    patience = 2000

    def __init__(
        self,
        model: RN1Model,
        scoreboard: Scoreboard,
        read: Callable[[], tuple[list[int], list[int]]],
        drive: Callable[[list[int], list[int]], None],
        tick: Callable[[], Awaitable],
        *,
        rng: random.Random | None = None,
        knobs: Knobs | None = None,
        layout: Layout | None = None,
    ):
        self.model = model
        self.scoreboard = scoreboard
        self.read, self.drive, self.tick = read, drive, tick
        self.rng = rng if rng is not None else random.Random(0)
        self.knobs = knobs or Knobs()
        self._layout = layout
        self.cycle = 0
        self.stats = Counter()

    @property
    def layout(self) -> Layout:
        """The layout given, else one router's in the mode it routes by now (a run-time
        router's setting may change between phases)."""
        return self._layout or router_layout(getattr(self.model, "routing", self.model.mode))

    async def phase(
        self,
        name: str,
        queues: list[list[list[int]]],
        limit: int = 20_000,
        knobs: Knobs | None = None,
    ) -> int:
        """Send every queue (one per input) until each transmission got through and every end
        is quiet (at most ``limit`` cycles); returns how many transmissions there were.
        ``knobs``: this phase's endpoints (default: the check's)."""
        sb, knobs = self.scoreboard, knobs or self.knobs
        senders = [End(True, random.Random(self.rng.getrandbits(32)), knobs, q) for q in queues]
        receivers = [End(False, random.Random(self.rng.getrandbits(32)), knobs) for _ in queues]
        ends = senders + receivers
        last = []  # the inputs driven in the cycle before
        total = sum(len(q) for q in queues)
        start = progress = self.cycle
        done = 0
        mismatches = sb.mismatches
        failed_at = None  # the cycle of this phase's first mismatch
        while self.cycle - start < limit:
            if failed_at is None and sb.mismatches > mismatches:
                failed_at = self.cycle
            if sb.mismatches and self.cycle - progress > self.patience:
                # The run has failed already, and a broken router that stopped connecting
                # (or only answers BLOCKED, which the senders retry for ever) would run to
                # the limit: mutants of fattree.mutants hung there.
                sb.fail(
                    "message_mismatches",
                    f"{name}: nothing got through for {self.patience} cycles after a mismatch "
                    f"(cycle {self.cycle}); phase ended",
                )
                break
            if failed_at is not None and self.cycle - failed_at > self.patience:
                # Failed in this phase: a broken router that keeps some transmissions stuck
                # while others get through would run to the limit (mutants hung there).
                sb.fail(
                    "message_mismatches",
                    f"{name}: failed {self.patience} cycles ago (cycle {self.cycle}); phase ended",
                )
                break
            o_fwd, i_bk = self.read()
            want = (list(self.model.o_fwd), list(self.model.i_bk))
            sb.compare(
                "cycle_mismatches", f"{name} cycle {self.cycle}", (o_fwd, i_bk), want, OUTPUTS
            )
            if knobs.rounds:
                idle = all(e.state in (IDLE, LISTEN) and not e.segment for e in ends)
                hold = not idle or any(o_fwd + i_bk + last)
                for e in senders:
                    e.hold = hold
            i_fwd = [s.step(i_bk[k]) for k, s in enumerate(senders)]
            o_bk = [r.step(o_fwd[k]) for k, r in enumerate(receivers)]
            self.drive(i_fwd, o_bk)
            last = i_fwd + o_bk
            self.model.step(i_fwd, o_bk)
            for d in self.model.decisions:
                if d is not None:
                    self.stats[d if isinstance(d, str) else "open"] += 1
            self.cycle += 1
            await self.tick()
            for e in senders + receivers:
                if e.state == WAIT_STATUS and e.waited > 64:
                    sb.fail(
                        "message_mismatches", f"{name}: a status never came (cycle {self.cycle})"
                    )
                    e._done()
                    e.queue.clear()
            # Progress: a segment confirmed CONNECTED at either end (BLOCKED answers are not).
            now = sum(len(e.sent) + len(e.received) for e in senders + receivers)
            if now > done:
                done, progress = now, self.cycle
            if all(e.quiet for e in senders + receivers) and not any(o_fwd + i_bk + i_fwd + o_bk):
                break
        else:
            sb.fail("message_mismatches", f"{name}: not finished in {limit} cycles")
        self._check_messages(name, queues, senders, receivers)
        self.stats["blocked_answers"] += sum(s.blocked for s in senders)
        return total

    def _check_messages(self, name, queues, senders, receivers) -> None:
        sb = self.scoreboard
        lay = self.layout
        want = Counter(
            (*lay.tx_key(i, b[0]), (lay.arrive(i, b[0]), *b[1:]))
            for i, q in enumerate(queues)
            for b in q
        )
        got_sent = Counter(
            (*lay.tx_key(i, seg[0]), (lay.arrive(i, seg[0]), *seg[1:]))
            for i, s in enumerate(senders)
            for tag, seg in s.sent
            if tag == "first"
        )
        got = Counter(
            (*lay.out_key(o), seg)
            for o, r in enumerate(receivers)
            for tag, seg in r.received
            if tag == "first"
        )
        sb.checked += sum(want.values())
        for what, have in (("delivered", got), ("confirmed to their senders", got_sent)):
            if have != want:
                lost, extra = dict(want - have), dict(have - want)
                sb.fail(
                    "message_mismatches",
                    f"{name}: transmissions {what}: missing {lost}, unexpected {extra}",
                )
        # Segments after a turn: what one end had confirmed, the other end received.
        turned_sent = Counter(
            seg for e in senders + receivers for tag, seg in e.sent if tag == "turn"
        )
        turned_got = Counter(
            seg for e in senders + receivers for tag, seg in e.received if tag == "turn"
        )
        self.stats["turn_segments"] += sum(turned_sent.values())
        if turned_sent != turned_got:
            sb.fail(
                "message_mismatches",
                f"{name}: turned segments sent {dict(turned_sent - turned_got)} "
                f"not received, received {dict(turned_got - turned_sent)} not sent",
            )


def simulate_network(
    dut,
    model,
    layout: Layout | None,
    pattern: str,
    count: int,
    seed: int,
    *,
    knobs: Knobs | None = None,
    mutate: bool = False,
):
    """Run one phase of ``pattern`` traffic through one RN1 router or a network of them
    (``dut``, with channel arrays ``i`` and ``o`` as ``layout`` numbers them; None: one
    router's 8 channels) in amaranth.sim, against ``model``; returns the scoreboard and the
    check."""
    from ..testbench import simulate

    n = layout.channels if layout is not None else 8
    scoreboard = Scoreboard(CHECKS, mutate=mutate)
    rng = random.Random(seed)
    result = {}

    async def bench(ctx):
        def read():
            return (
                [ctx.get(dut.o[k].fwd.as_value()) for k in range(n)],
                [ctx.get(dut.i[k].bk.as_value()) for k in range(n)],
            )

        def drive(i_fwd, o_bk):
            for k in range(n):
                ctx.set(dut.i[k].fwd.as_value(), i_fwd[k])
                ctx.set(dut.o[k].bk.as_value(), o_bk[k])

        check = RN1Check(
            model, scoreboard, read, drive, ctx.tick, rng=rng, knobs=knobs or Knobs(), layout=layout
        )
        await check.phase(pattern, transmissions(pattern, count, rng, layout))
        result["check"] = check

    simulate(dut, bench)
    return scoreboard, result["check"]


def network_queues(net, pairs, rng: random.Random, extra: int = 3, *, least=1, link=None):
    """Per source channel (node ``a``'s link ``link``, or ``0`` or ``1`` at random; ``a``
    None: one of the root's top links at random), transmissions for ``pairs`` (source node,
    destination node or None: the top) over a network of unit trees or clusters
    (``net.heads``, ``net.route``): head bytes, then ``least`` .. ``extra`` data bytes.
    Returns (queues, expected deliveries ``Counter((dest, (head as it arrives, *data)))``,
    ``dest`` :data:`TOP` for the top)."""
    queues, want = {}, Counter()
    for a, b in pairs:
        heads = net.heads(a, b, rng.getrandbits(8))
        data = [rng.getrandbits(8) for _ in range(rng.randint(least, extra))]
        if a is None:
            top = len(net.inputs) - ENDPOINT_LINKS * net.nodes
            channel = ENDPOINT_LINKS * net.nodes + rng.randrange(top)
        else:
            channel = 2 * a + (rng.randrange(2) if link is None else link)
        queues.setdefault(channel, []).append(heads + data)
        last = heads[-1]
        for _ in net.route(a, b)[-1]:
            last = pass_head(last)
        want[TOP if b is None else b, (last, *data)] += 1
    return queues, want


def run_network_traffic(model, queues, knobs: Knobs, rng: random.Random, limit: int, shadow=None):
    """Senders (:class:`End`) on the channels of ``queues``, receivers on every output channel
    that gets a word; run ``model`` until every end is quiet. ``shadow``: a second model
    stepped with the same inputs, whose outputs must equal ``model``'s every cycle. Returns
    (senders, receivers, cycles)."""
    senders = {
        c: End(True, random.Random(rng.getrandbits(32)), knobs, q) for c, q in queues.items()
    }
    receivers = {}
    n = model.channels
    for cycle in range(limit):
        o_fwd, i_bk = model.o_fwd, model.i_bk
        if shadow is not None:
            assert (shadow.o_fwd, shadow.i_bk) == (o_fwd, i_bk), f"cycle {cycle}"
        for c, w in enumerate(o_fwd):
            if w and c not in receivers:
                receivers[c] = End(False, random.Random(rng.getrandbits(32)), knobs)
        i_fwd, o_bk = [0] * n, [0] * n
        for c, sender in senders.items():
            i_fwd[c] = sender.step(i_bk[c])
        for c, r in receivers.items():
            o_bk[c] = r.step(o_fwd[c])
        model.step(i_fwd, o_bk)
        if shadow is not None:
            shadow.step(i_fwd, o_bk)
        ends = list(senders.values()) + list(receivers.values())
        if all(e.quiet for e in ends) and not any(i_fwd + o_bk + o_fwd + i_bk):
            return senders, receivers, cycle
    raise AssertionError(f"traffic not done in {limit} cycles")


#: What :func:`network_queues` and :func:`delivered_by_node` name the root's top by.
TOP = "top"


def delivered_by_node(receivers, nodes: int | None = None) -> Counter:
    """``Counter((node, segment))`` of the first segments the receivers got (two links a
    node; with ``nodes``, the channels after theirs, the root's top links, are :data:`TOP`)."""
    return Counter(
        (c // 2 if nodes is None or c < 2 * nodes else TOP, seg)
        for c, r in receivers.items()
        for tag, seg in r.received
        if tag == "first"
    )


def level_pairs(nodes: int, count: int, rng: random.Random) -> list[tuple[int, int]]:
    """``count`` (source, destination) node pairs of a network of ``nodes`` (a power of 4),
    the level of their lowest common tree node drawn evenly from ``1 .. log4(nodes)``: every
    distance as often, where uniform pairs would nearly all cross the top."""
    levels = (nodes.bit_length() - 1) // 2
    pairs = []
    for k in range(count):
        level = 1 + k % levels
        a = rng.randrange(nodes)
        # Base-4 digit level - 1 differs (1..3), the digits below at random.
        b = a ^ (rng.randrange(1, 4) << 2 * (level - 1)) ^ rng.getrandbits(2 * (level - 1))
        pairs.append((a, b))
    return pairs


async def network_phase(
    model,
    scoreboard: Scoreboard,
    read: Callable[[], tuple[list[int], list[int]]],
    drive: Callable[[list[int], list[int]], None],
    tick: Callable[[], Awaitable],
    queues: dict,
    want: Counter,
    knobs: Knobs,
    rng: random.Random,
    *,
    limit: int = 5000,
    name: str = "random",
) -> dict:
    """A network of thousands of channels against ``model`` every cycle: senders
    (:class:`End`) on the channels of ``queues`` (:func:`network_queues`), receivers on every
    output channel that gets a word; every output word of every channel compared each cycle
    (``cycle_mismatches``), and the first segments delivered by node against ``want``
    (``message_mismatches``). Only the ends in use are stepped, so a bench on 8704 channels
    costs what its traffic costs. Returns the run's counts."""
    n = model.channels
    names = [f"o_fwd[{c}]" for c in range(n)] + [f"i_bk[{c}]" for c in range(n)]
    senders = {
        c: End(True, random.Random(rng.getrandbits(32)), knobs, q) for c, q in queues.items()
    }
    receivers = {}
    cycle = 0
    while True:
        o_fwd, i_bk = read()
        ref = model.o_fwd + model.i_bk
        scoreboard.compare("cycle_mismatches", f"{name} cycle {cycle}", o_fwd + i_bk, ref, names)
        for c, w in enumerate(o_fwd):
            if w and c not in receivers:
                receivers[c] = End(False, random.Random(rng.getrandbits(32)), knobs)
        i_fwd, o_bk = [0] * n, [0] * n
        for c, sender in senders.items():
            i_fwd[c] = sender.step(i_bk[c])
        for c, receiver in receivers.items():
            o_bk[c] = receiver.step(o_fwd[c])
        drive(i_fwd, o_bk)
        model.step(i_fwd, o_bk)
        cycle += 1
        await tick()
        ends = list(senders.values()) + list(receivers.values())
        if all(e.quiet for e in ends) and not any(i_fwd + o_bk + o_fwd + i_bk):
            break
        if cycle >= limit:
            scoreboard.fail("message_mismatches", f"{name}: not finished in {limit} cycles")
            break
    got = delivered_by_node(receivers, getattr(getattr(model, "net", None), "nodes", None))
    scoreboard.checked += sum(want.values())
    if got != want:
        scoreboard.fail(
            "message_mismatches",
            f"{name}: delivered {sum(got.values())} of {sum(want.values())}; missing "
            f"{dict(want - got)}, unexpected {dict(got - want)}",
        )
    return {
        "cycles": cycle,
        "senders": len(senders),
        "retries": sum(s.blocked for s in senders.values()),
        "turned_segments": sum(tag == "turn" for e in ends for tag, _ in e.sent),
    }


#: The endpoints of the rounds that close coverage holes: in step (:data:`BURST`), or in
#: step with turns, busy receivers, refused replies, idle words with data and code bytes.
STEER = (
    BURST,
    Knobs(start=1.0, turn=0.5, busy=0.3, max_delay=0, max_gap=0, noise=True, codes=0.3, refuse=0.3),
)


#: The most senders of a steered round, and the cycles it may take.
STEER_SENDERS, STEER_LIMIT = 16, 3000


def hole_rounds(check: RN1Check, rng: random.Random, *, tries: int):
    """Rounds of a few transmissions that close the holes of ``check.model.coverage``, each
    tried on a copy of the model first (the copy's check draws the endpoints' randomness
    as ``check`` will): yields ``(name, queues, knobs, setting)``, one round that hits a
    hole at a time, until no hole is left or ``tries`` candidates were tried. A candidate: 1
    to 3 rounds (:func:`burst`) from 2 to every input channel, to one or two targets, of one
    length (0, 1 or up to 5 bytes after the head), under one of :data:`STEER`'s endpoints:
    heads that meet in one cycle, some onto outputs still held from the round before; for
    a run-time router, the ``alternate`` setting it runs in (else None)."""
    layout = check.layout
    runtime = getattr(check.model, "mode", None) == RUNTIME

    def candidate():
        senders = rng.sample(
            range(layout.channels), rng.randint(2, min(STEER_SENDERS, layout.channels))
        )
        queues = [[] for _ in range(layout.channels)]
        length = rng.choice((0, 1, 5))
        for _ in range(rng.randint(1, 3)):
            size = rng.randint(0, length)
            targets = rng.sample(range(layout.targets), rng.randint(1, 2))
            for i in senders:
                heads = [layout.head(i, t, rng.getrandbits(8)) for t in targets]
                heads = [h for h in heads if h is not None]  # a target the sender can reach
                if heads:
                    queues[i].append(
                        [rng.choice(heads)] + [rng.getrandbits(8) for _ in range(size)]
                    )
        setting = rng.randrange(2) if runtime else None
        return queues, rng.choice(STEER), setting

    def reach(drawn):
        return _tried(check, *drawn)

    for k, (queues, knobs, setting) in closing_rounds(check.model, tries, candidate, reach):
        yield f"steer-{k}", queues, knobs, setting


def _tried(check: RN1Check, queues, knobs: Knobs, setting: int | None):
    """The coverage a round would reach: the phase run on a copy of the model (a run-time
    router's ``alternate`` at ``setting``), its ends' randomness drawn as ``check`` would
    draw it."""
    twin = check.model.clone()
    if setting is not None:
        twin.alternate = setting
    rng = random.Random()
    rng.setstate(check.rng.getstate())

    async def tick():
        return None

    trial = RN1Check(
        twin,
        Scoreboard(CHECKS),
        lambda: (list(twin.o_fwd), list(twin.i_bk)),
        lambda i_fwd, o_bk: None,
        tick,
        rng=rng,
        layout=check.layout,
    )
    # Nothing in the phase waits (the tick returns at once): run it to its end here, as the
    # bench may itself be running in an event loop.
    phase = trial.phase("try", queues, limit=STEER_LIMIT, knobs=knobs)
    try:
        phase.send(None)
    except StopIteration:
        # A round that does not finish in time (many senders retrying for one receiver)
        # is not run: it counts as reaching nothing.
        return check.model.coverage if trial.scoreboard.mismatches else twin.coverage
    raise AssertionError("a phase on the model alone waited")


#: The endpoints of :func:`network_hole_rounds`: :data:`STEER`'s, and ends that start at
#: random (heads whose paths differ in length meet only if they start apart).
NETWORK_STEER = (*STEER, Knobs(start=0.5, turn=0.2, busy=0.2, max_delay=1, max_gap=2))
#: Ends that start over some ten cycles, for heads whose ways differ by as many.
SPREAD = Knobs(start=0.1, turn=0.2, busy=0.2, max_delay=1, max_gap=2)


def network_hole_rounds(model, rng: random.Random, *, tries: int):
    """:func:`hole_rounds` for the networks of unit trees or clusters driven by
    :func:`network_phase` (``model.net`` names their routes): yields ``(name, queues, want,
    knobs, seed)``, the ends' randomness drawn from ``random.Random(seed)``. A candidate:
    from 2 to :data:`STEER_SENDERS` nodes, anywhere or under one level-1 or level-2 node,
    each a transmission (:func:`network_queues`: on one link of every node or either, with
    or without data) to one of one or two destination nodes (anywhere, or under that same
    node; or, half the time while some are left, one that no transmission has reached yet),
    under one of :data:`NETWORK_STEER`'s endpoints; where the bench drives the root's top
    links, also up to eight senders there and, a quarter of the time, the top as the
    destination. First, where more nodes are unreached than the candidates could aim at, a
    round to each of them (:func:`_delivery_sweep`)."""
    nodes = model.net.nodes
    sweep = _delivery_sweep(model, rng, tries)
    if sweep is not None:
        yield ("sweep", *sweep)

    # Senders anywhere, or under one level-1 or level-2 node. Clusters under unit trees:
    # also one cluster, up to three times the senders, and ends that start over some ten
    # cycles (a head from a node and one from the tree meet in the node's cluster only if
    # the one that left later has the shorter way).
    leaf = model.net.cluster if getattr(model.net, "cluster", 0) and model.net.stages > 1 else 0
    blocks = (nodes, leaf, 4 * leaf, 16 * leaf) if leaf else (nodes, 4, 16)
    most = 3 * STEER_SENDERS if leaf else STEER_SENDERS
    # A network whose root's top links the bench drives: they send too, and take some; a
    # head from the top meets one from a node at the top's routers only if it left later.
    top = model.endpoint_bin(ENDPOINT_LINKS * nodes) is not None
    ends = (*NETWORK_STEER, SPREAD) if leaf or top else NETWORK_STEER

    def candidate():
        block = rng.choice(blocks)
        base = rng.randrange(max(1, nodes // block)) * block
        pool = range(base, min(nodes, base + block))
        senders = rng.sample(pool, rng.randint(min(2, len(pool)), min(most, len(pool))))
        # Destinations anywhere, or under the same node as the senders (their routes turn
        # there: heads climbing from different up routers meet in one down router).
        dests = rng.sample(rng.choice((range(nodes), pool)), min(len(pool), rng.randint(1, 2)))
        holes = set(model.coverage.holes())
        missing = [e for e in range(nodes) if f"deliver:{model.endpoint_bin(2 * e)}" in holes]
        if missing and rng.random() < 0.5:  # a node no transmission has reached yet
            dests = [rng.choice(missing)]
        if top:
            senders += [None] * rng.randint(0, 8)
            if rng.random() < 0.25:
                dests = [None]
        pairs = [(a, b) for a in senders for b in [rng.choice(dests)] if a != b]
        queues, want = network_queues(
            model.net,
            pairs,
            random.Random(rng.getrandbits(32)),
            rng.choice((1, 3)),
            least=rng.choice((0, 1)),
            link=rng.choice((None, 0, 1)),
        )
        return queues, want, rng.choice(ends), rng.getrandbits(32)

    def reach(drawn):
        return _network_tried(model, *drawn)

    for k, drawn in closing_rounds(model, tries, candidate, reach):
        yield (f"steer-{k}", *drawn)


def _delivery_sweep(model, rng: random.Random, tries: int):
    """A round with one transmission to every node no transmission has reached yet, each
    from a node drawn at random, when there are more of them than the rounds of
    :func:`network_hole_rounds` could reach (half their ``tries`` aim at one such node): a
    network of hundreds of nodes driven by fewer transmissions. ``(queues, want, knobs,
    seed)``, or None (the randomness ``rng`` untouched)."""
    nodes = model.net.nodes
    holes = set(model.coverage.holes())
    missing = [b for b in range(nodes) if f"deliver:{model.endpoint_bin(2 * b)}" in holes]
    if len(missing) <= tries // 2:
        return None
    pairs = []
    for b in missing:
        a = rng.randrange(nodes - 1)
        pairs.append((a + (a >= b), b))
    queues, want = network_queues(model.net, pairs, random.Random(rng.getrandbits(32)))
    return queues, want, rng.choice(NETWORK_STEER), rng.getrandbits(32)


def _network_tried(model, queues, want, knobs: Knobs, seed: int):
    """The coverage a round of :func:`network_hole_rounds` would reach, run on a model in
    ``model``'s state (``model.tried()``)."""
    with model.tried() as twin:
        sb = Scoreboard(CHECKS)

        async def tick():
            return None

        def read():
            return twin.o_fwd, twin.i_bk

        phase = network_phase(
            twin,
            sb,
            read,
            lambda i_fwd, o_bk: None,
            tick,
            queues,
            want,
            knobs,
            random.Random(seed),
            limit=STEER_LIMIT,
            name="try",
        )
        try:
            phase.send(None)
        except StopIteration:
            reached = None if sb.mismatches else copy.deepcopy(twin.coverage)
        else:
            raise AssertionError("a phase on the model alone waited")
    return reached or model.coverage
