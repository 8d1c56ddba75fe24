"""Cycle-exact reference model of the RN1 endpoint interface, and of the bidelta network with
one on every endpoint (docs/dehon.md, section "Endpoints"; definitions in
:mod:`fattree.spec.rn1_endpoint`).

Restated from the docs and the definitions, not from the RTL. :class:`RN1EndpointModel` holds
one endpoint's registers; :meth:`RN1EndpointModel.step` takes what arrives in one cycle and
advances one clock. Its outputs are attributes and properties read before that cycle's step:
the network side (``o_fwd``, ``i_bk``) and the counters are registers, the stream side
(``tx_ready``, ``rx_valid``, ``rx_data``, ``rx_last``) and ``busy`` depend only on registers.

The rules, per cycle:

* **Send** (states LOAD, PEND, SEND, WAIT). LOAD takes a ``tx`` beat when one is offered: the
  first beat's ``dest`` is kept, bytes go into the buffer while it has room (a beat beyond
  ``max_bytes`` marks the frame too long); on ``last`` a too-long frame is counted in
  ``dropped`` and forgotten, any other goes to PEND with no BLOCKED yet. PEND starts an
  attempt when the strategy lets it (``immediate``: at once; ``round``: ``go`` high;
  ``backoff``: the wait is 0, else it counts down): the head goes out on output ``port`` (a
  register one cycle later), then one byte per cycle in SEND; after the last byte WAIT, and
  the link carries 0 (the DROP close, then idle). In WAIT, the status on the backward link of
  ``port``: CONNECTED counts ``sent``, ends the message and flips ``port``; BLOCKED counts
  ``retries``, flips ``port`` and goes back to PEND (``backoff``: the wait of
  :func:`backoff_cycles` for the number of failed attempts in a row, from the LFSR's value
  now). Neither on the ``timeout``-th cycle of WAIT: the attempt is given up as if BLOCKED
  but counted in ``timeouts``; the :data:`GIVE_UP`-th timeout in a row (a BLOCKED ends the
  row) drops the message instead (``dropped``, back to LOAD, ``port`` flipped).
* **Receive**, per input ``k``: a head (``ctrl`` rising) on an idle input starts a reception
  if buffer ``k`` is empty, else a discard. Bytes fill the buffer (one beyond ``max_bytes``
  marks it too long); the close (``ctrl`` 0) ends it: stored and answered CONNECTED on
  ``i_bk[k]`` (one cycle later), ``received`` counted, or answered BLOCKED if too long or
  empty; a discarded one is answered BLOCKED at its close.
* **Out**: ``rx`` shows buffer ``sel`` while it is full, byte ``idx``; a beat is taken with
  ``ready``; after the last one the buffer is empty and ``sel`` flips; ``sel`` also flips in
  every cycle its buffer is empty.
"""

from __future__ import annotations

import copy

from ...params import check_int_range
from ...spec.lfsr import LFSRModel
from ...spec.rn1 import BLOCKED, CONNECTED, ctrl_of, data_of, word
from ...spec.rn1_bidelta import ENDPOINT_LINKS, check_endpoints
from ...spec.rn1_endpoint import (
    BACKOFF_CAP,
    COUNTER_BITS,
    GIVE_UP,
    LFSR_WIDTH,
    RN1_BIDELTA_STREAM,
    RN1_FAT_TREE,
    TIMEOUT,
    backoff_cycles,
    check_dead_outputs,
    check_max_bytes,
    check_retry,
    check_route,
    check_timeout,
    endpoint_seed,
    path_routers,
    route_heads,
)
from ...spec.rn1_tree import UnitTree
from ..coverage import Coverage, CoverPoint
from .rn1 import (
    RN1BideltaModel,
    RN1FatTreeModel,
    route_senders,
    router_cover_points,
    senders_per_stage,
)

__all__ = ["RN1EndpointModel", "RN1BideltaStreamModel", "RN1FatTreeStreamModel"]

LOAD, PEND, SEND, WAIT = range(4)
R_IDLE, R_RECV, R_DISCARD = range(3)
_TOP = (1 << COUNTER_BITS) - 1
#: Failed attempts before a message was sent, as the cover bins name them.
_STREAKS = ((0, "first try"), (1, "1 retry"), (2, "2-3 retries"), (4, "4-7"), (8, "8+"))


class RN1EndpointModel:
    """Registers of one :class:`~fattree.hdl.rn1.endpoint.RN1Endpoint` (same parameters; the
    head bytes from the route rule of the definitions, :func:`route_heads`)."""

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
        self.reset()

    #: The run's :class:`~fattree.sim.coverage.Coverage` (None: not counted; the points are
    #: :meth:`RN1BideltaStreamModel.cover_points`).
    cover: Coverage | None = None

    def reset(self) -> None:
        self.lfsr = LFSRModel(LFSR_WIDTH, seed=self.seed)
        self.state = LOAD
        self.buf: list[int] = []
        self.over = False
        self.dest = 0
        self.pos = 0
        self.port = 0
        self.in_a_row = 0  # failed attempts in a row for this message (uncapped)
        self.strikes = 0  # timeouts in a row for this message
        self.age = 0  # cycles of WAIT without a status so far
        self.wait = 0
        self.o_fwd = [0] * ENDPOINT_LINKS
        self.i_bk = [0] * ENDPOINT_LINKS
        self.rstate = [R_IDLE] * ENDPOINT_LINKS
        self.rprev = [0] * ENDPOINT_LINKS
        self.rbuf: list[list[int]] = [[] for _ in range(ENDPOINT_LINKS)]
        self.rover = [False] * ENDPOINT_LINKS
        self.full = [False] * ENDPOINT_LINKS
        self.sel = 0
        self.idx = 0
        self.sent = self.retries = self.received = self.dropped = self.timeouts = 0
        #: Failed attempts (BLOCKED or timed out) of each message, in the order the messages
        #: ended (confirmed, or dropped after GIVE_UP timeouts).
        self.blocked_per_message: list[int] = []
        self.started = 0  # cycle of the current message's first attempt
        self.cycle = 0
        #: Cycles from a message's first attempt to its CONNECTED status, per message.
        self.latencies: list[int] = []

    # Outputs that depend only on registers.
    @property
    def tx_ready(self) -> int:
        return int(self.state == LOAD)

    @property
    def busy(self) -> int:
        return int(self.state in (SEND, WAIT))

    @property
    def rx_valid(self) -> int:
        return int(self.full[self.sel])

    @property
    def rx_data(self) -> int:
        return self.rbuf[self.sel][self.idx] if self.full[self.sel] else 0

    @property
    def rx_last(self) -> int:
        return int(self.full[self.sel] and self.idx == len(self.rbuf[self.sel]) - 1)

    def step(self, tx_valid, tx_data, tx_dest, tx_last, rx_ready, o_bk, i_fwd, go=0) -> None:
        """One clock: a ``tx`` beat offered (``tx_valid``, its fields), ``rx_ready``, the
        backward words of the two outputs (``o_bk``), the forward words of the two inputs
        (``i_fwd``), and ``go``."""
        n_o_fwd = [0] * ENDPOINT_LINKS
        sent, retries, dropped, timeouts = self._send(
            tx_valid, tx_data, tx_dest, tx_last, o_bk, go, n_o_fwd
        )
        n_i_bk, n_full, received = self._receive(i_fwd)
        self._deliver(rx_ready, n_full)
        self.full = n_full
        self.o_fwd, self.i_bk = n_o_fwd, n_i_bk
        self.sent = min(_TOP, self.sent + sent)
        self.retries = min(_TOP, self.retries + retries)
        self.dropped = min(_TOP, self.dropped + dropped)
        self.received = min(_TOP, self.received + received)
        self.timeouts = min(_TOP, self.timeouts + timeouts)
        self.lfsr.clock()
        self.cycle += 1

    def _send(self, tx_valid, tx_data, tx_dest, tx_last, o_bk, go, n_o_fwd) -> tuple:
        """The send side's cycle (``n_o_fwd``: the forward words it puts out next cycle);
        returns the counts ``(sent, retries, dropped, timeouts)`` it adds."""
        state = self.state
        if tx_valid and self.cover is not None:
            self.cover.hit("tx", "taken" if state == LOAD else "held: sending")
        if state == LOAD:
            if tx_valid:
                return 0, 0, self._load(tx_data, tx_dest, tx_last), 0
        elif state == PEND:
            if self._may_start(go):
                n_o_fwd[self.port] = word(1, self.heads[self.dest])
                self.pos = 0
                self.state = SEND
        elif state == SEND:
            n_o_fwd[self.port] = word(1, self.buf[self.pos])
            self.pos += 1
            if self.pos == len(self.buf):
                self.state = WAIT
                self.age = 0
        elif state == WAIT:
            return self._await_status(o_bk[self.port])
        return 0, 0, 0, 0

    def _load(self, tx_data, tx_dest, tx_last) -> int:
        """A ``tx`` beat taken in LOAD; returns 1 when it ends a frame too long (dropped)."""
        if not self.buf and not self.over:
            self.dest = tx_dest
        if len(self.buf) == self.max_bytes:
            too_long = True
            self.over = True
        else:
            too_long = self.over
            self.buf.append(tx_data & 0xFF)
        if not tx_last:
            return 0
        if self.cover is not None:
            full = "max_bytes" if len(self.buf) == self.max_bytes else "shorter"
            self.cover.hit("frame", "too long: dropped" if too_long else full)
        if too_long:
            self.buf, self.over = [], False
            return 1
        self.in_a_row, self.strikes, self.wait = 0, 0, 0
        self.state = PEND
        self.started = self.cycle + 1
        return 0

    def _may_start(self, go) -> bool:
        """Whether the retry strategy lets PEND start an attempt this cycle (``backoff``
        counts its wait down meanwhile)."""
        if self.retry == "immediate":
            return True
        if self.retry == "round":
            if self.cover is not None:
                self.cover.hit("retry/round", "go: start" if go else "no go: wait")
            return bool(go)
        start = self.wait == 0
        if self.wait:
            self.wait -= 1
        return start

    def _await_status(self, status) -> tuple:
        """WAIT: the status on the backward link of ``port`` (or none, until the timeout);
        returns the counts ``(sent, retries, dropped, timeouts)`` it adds."""
        sent = retries = dropped = timeouts = 0
        if self.cover is not None:
            self._cover_status(status)
        if status == word(0, CONNECTED):
            sent = 1
            self.blocked_per_message.append(self.in_a_row)
            self.latencies.append(self.cycle - self.started)
            self.buf, self.over = [], False
            self.port ^= 1
            self.state = LOAD
        elif status == word(0, BLOCKED) or self.age == self.timeout - 1:
            if status == word(0, BLOCKED):
                retries = 1
                self.strikes = 0
            else:  # no status in time: a dead link or router on the way
                timeouts = 1
                self.strikes += 1
            self.in_a_row += 1
            self.port ^= 1
            if self.strikes == GIVE_UP:
                dropped = 1
                self.blocked_per_message.append(self.in_a_row)
                self.buf, self.over = [], False
                self.state = LOAD
            else:
                self.state = PEND
                if self.retry == "backoff":
                    x = self.lfsr.state
                    self.wait = backoff_cycles(min(self.in_a_row, BACKOFF_CAP), x)
                    if self.cover is not None:
                        self._cover_backoff()
        else:
            self.age += 1
        return sent, retries, dropped, timeouts

    def _cover_status(self, status) -> None:
        """Count the status (or its absence) in a WAIT cycle: by output, by where it came
        from (its wait tells: a BLOCKED from stage ``j`` of the bidelta comes ``2j + 2``
        cycles after the last byte, the destination's answer ``2s + 2``), and, when it ends
        the message, by the failed attempts before."""
        cover, k = self.cover, self.port
        connected, blocked = status == word(0, CONNECTED), status == word(0, BLOCKED)
        if not (connected or blocked):
            if self.age == self.timeout - 1:
                cover.hit("status", f"timeout on output {k}")
                if self.strikes + 1 == GIVE_UP:
                    cover.hit("message", "given up")
            return
        code = "CONNECTED" if connected else "BLOCKED"
        cover.hit("status", f"{code} on output {k}")
        stage, odd = divmod(self.age - 2, 2)
        path = self.path()
        if connected or stage == len(path):
            where = code if connected else "BLOCKED by the receiver"
        else:
            where = f"BLOCKED by {path[stage]}" + (f", after {self.age}" if odd else "")
        cover.hit("answer", where)
        if self.in_a_row:
            cover.hit(f"retry/{self.retry}", f"retry {code}")
        if connected:
            cover.hit("message", next(b for n, b in reversed(_STREAKS) if self.in_a_row >= n))

    def path(self) -> list[str]:
        """The routers from here to the current destination, as the ``answer`` bins name
        them: the bidelta's stages (``stage j``); in the unit tree the up router, then the
        down layers from the lowest common node's level ``L`` (``down L`` .. ``down1``; a
        node to itself turns at level 1)."""
        if self.route == "bidelta":
            return [f"stage {j}" for j in range(path_routers(self.route, self.endpoints))]
        level = len(UnitTree.route(self.node, self.dest)) - 1 if self.dest != self.node else 1
        return ["up"] + [f"down{k}" for k in range(level, 0, -1)]

    def _cover_backoff(self) -> None:
        """Count the back-off drawn after a failed attempt: none (at once) or a wait, and
        whether the window had reached its cap."""
        self.cover.hit("retry/backoff", "drew a wait" if self.wait else "drew 0: at once")
        if self.in_a_row >= BACKOFF_CAP:
            self.cover.hit("retry/backoff", "window capped")

    def _receive(self, i_fwd) -> tuple[list[int], list[bool], int]:
        """The receive side's cycle on both inputs: the backward words it answers next cycle,
        the buffers' full flags after it, and the messages it received."""
        mb = self.max_bytes
        received = 0
        n_i_bk = [0] * ENDPOINT_LINKS
        n_full = list(self.full)
        for k in range(ENDPOINT_LINKS):
            f = i_fwd[k]
            ctrl = ctrl_of(f)
            if self.rstate[k] == R_IDLE:
                if ctrl and not self.rprev[k]:
                    if self.cover is not None:
                        self.cover.hit("receive", "refused: full" if self.full[k] else "accepted")
                    if self.full[k]:
                        self.rstate[k] = R_DISCARD
                    else:
                        self.rstate[k] = R_RECV
                        self.rbuf[k], self.rover[k] = [], False
            elif self.rstate[k] == R_RECV:
                if ctrl:
                    if len(self.rbuf[k]) == mb:
                        self.rover[k] = True
                    else:
                        self.rbuf[k].append(data_of(f))
                else:
                    self.rstate[k] = R_IDLE
                    if self.rover[k] or not self.rbuf[k]:
                        if self.cover is not None:  # no bin: a sender of equal max_bytes
                            self.cover.hit("receive", "refused: too long or empty")
                        n_i_bk[k] = word(0, BLOCKED)
                    else:
                        n_i_bk[k] = word(0, CONNECTED)
                        n_full[k] = True
                        received += 1
            elif not ctrl:  # discarding: the close
                self.rstate[k] = R_IDLE
                n_i_bk[k] = word(0, BLOCKED)
            self.rprev[k] = ctrl
        if received == ENDPOINT_LINKS and self.cover is not None:
            self.cover.hit("receive", "stored on both inputs at once")
        return n_i_bk, n_full, received

    def _deliver(self, rx_ready, n_full: list[bool]) -> None:
        """The ``rx`` side's cycle: a beat of buffer ``sel`` taken, or ``sel`` flipped past
        an empty buffer (``n_full``: the full flags after this cycle, updated)."""
        if self.full[self.sel] and self.cover is not None:
            self.cover.hit("rx", "taken" if rx_ready else "held: not ready")
        if not self.full[self.sel]:
            self.sel ^= 1
        elif rx_ready:
            if self.idx == len(self.rbuf[self.sel]) - 1:
                n_full[self.sel] = False
                self.idx = 0
                self.sel ^= 1
            else:
                self.idx += 1


class _StreamModel:
    """A network model ``net`` with an :class:`RN1EndpointModel` per processing node on its
    first ``2 * len(endpoints)`` channels (node ``e``'s link ``k`` is channel ``2e + k``;
    any further channel, such as the fat-tree root's top links, idle both ways), and the
    rounds' ``go`` register: high one cycle after a cycle in which no endpoint was busy.

    :meth:`step` takes, per endpoint, the ``tx`` beat offered (``(valid, data, dest,
    last)``) and ``rx_ready``; :attr:`endpoints` holds the endpoint models, whose attributes
    are the outputs."""

    def __init__(self, net, endpoints: list[RN1EndpointModel], dead_outputs=()):
        self.net, self.endpoints = net, endpoints
        self.dead_outputs = check_dead_outputs(dead_outputs, len(endpoints))
        self.go = 0

    def reset(self) -> None:
        self.net.reset()
        for ep in self.endpoints:
            ep.reset()
        self.go = 0

    def step(self, tx, rx_ready) -> None:
        net, eps = self.net, self.endpoints
        n_fwd, n_bk = net.o_fwd, list(net.i_bk)  # what the network shows this cycle
        i_fwd = [0] * net.channels
        o_bk = [0] * net.channels
        for e, ep in enumerate(eps):
            for k in range(ENDPOINT_LINKS):
                i_fwd[ENDPOINT_LINKS * e + k] = ep.o_fwd[k]
                o_bk[ENDPOINT_LINKS * e + k] = ep.i_bk[k]
        for c in self.dead_outputs:  # cut: nothing crosses either way
            i_fwd[c] = 0
            n_bk[c] = 0
        go = self.go
        self.go = int(not any(ep.busy for ep in eps))
        for e, ep in enumerate(eps):
            c = ENDPOINT_LINKS * e
            ep.step(
                *tx[e],
                rx_ready[e],
                n_bk[c : c + ENDPOINT_LINKS],
                n_fwd[c : c + ENDPOINT_LINKS],
                go,
            )
        net.step(i_fwd, o_bk)

    #: What :meth:`start_coverage` counts into (None: not counted).
    coverage: Coverage | None = None

    def cover_points(self) -> list[CoverPoint]:
        """The situations of DeHon's routing rule per group of routers (:meth:`router_points`)
        and of the endpoint protocol, over all endpoints (docs/dehon.md, "Coverage of the
        network with endpoints"). Timeouts and given-up messages are declared only with
        ``dead_outputs``: in a working network every status comes within the timeout."""
        ep = self.endpoints[0]
        points = self.router_points()
        cut = self.dead_outputs
        timeouts = tuple(f"timeout on output {k}" for k in (0, 1) if any(c % 2 == k for c in cut))
        mute = any(2 * e in cut and 2 * e + 1 in cut for e in range(len(self.endpoints)))
        retry = {
            "immediate": (),
            "round": ("go: start", "no go: wait"),
            "backoff": ("drew 0: at once", "drew a wait", "window capped"),
        }[ep.retry]
        frames = ("shorter",) if ep.max_bytes > 1 else ()
        return points + [
            CoverPoint(
                "tx",
                ("taken", "held: sending"),
                "a frame's beat taken, or held while the endpoint sends the previous message",
            ),
            CoverPoint(
                "frame",
                (*frames, "max_bytes", "too long: dropped"),
                "a frame that fits the send buffer, fills it, or is too long (dropped and counted)",
            ),
            CoverPoint(
                "status",
                tuple(f"{c} on output {k}" for k in (0, 1) for c in ("CONNECTED", "BLOCKED"))
                + timeouts,
                "the status of an attempt on each of the endpoint's two ways in "
                "(attempts take turns), or none in time",
            ),
            CoverPoint(
                "answer",
                ("CONNECTED", *self.answers(), "BLOCKED by the receiver"),
                "where the status came from, end to end: the destination's "
                "acknowledgement, a stage that found no free output, or a "
                "destination whose buffer was full",
            ),
            CoverPoint(
                "message",
                (*(b for _, b in _STREAKS), *(("given up",) if mute else ())),
                "a message sent at its first attempt or after failed ones (in a "
                "row), or dropped after four timeouts in a row",
            ),
            CoverPoint(
                f"retry/{ep.retry}",
                ("retry CONNECTED", "retry BLOCKED", *retry),
                f"the {ep.retry} strategy: a retry's status, and what it decides",
            ),
            CoverPoint(
                "receive",
                ("accepted", "refused: full", "stored on both inputs at once"),
                "a head arriving at an input whose buffer is empty or still holds "
                "a message (refused: receive back-pressure); both inputs storing "
                "in one cycle",
            ),
            CoverPoint(
                "rx",
                ("taken", "held: not ready"),
                "a received message's beat taken, or held by a user not ready",
            ),
        ]

    def start_coverage(self) -> Coverage:
        """Count hits in :meth:`cover_points` from now on; the :class:`Coverage` to read."""
        coverage = Coverage(self.cover_points())
        for key, router in self.net.routers.items():
            router.cover, router.cover_tag = coverage, self.router_tag(key)
        for ep in self.endpoints:
            ep.cover = coverage
        self.coverage = coverage
        return coverage

    def clone(self):
        """An independent copy in the same state (its coverage too), to try traffic on."""
        return copy.deepcopy(self)


class RN1BideltaStreamModel(_StreamModel):
    """:class:`RN1BideltaModel` with an :class:`RN1EndpointModel` on every endpoint (seeds
    from :func:`fattree.spec.rn1_endpoint.endpoint_seed`), as
    :class:`~fattree.hdl.rn1.bidelta_stream.RN1BideltaStream` (same parameters; ``dead_outputs``
    the endpoint output channels cut from the network)."""

    def __init__(
        self, endpoints=16, seed=1, retry="immediate", max_bytes=8, timeout=TIMEOUT, dead_outputs=()
    ):
        n = RN1_BIDELTA_STREAM.check("endpoints", endpoints, model=True)
        seed = RN1_BIDELTA_STREAM.check("seed", seed, model=True)
        retry = RN1_BIDELTA_STREAM.check("retry", retry, model=True)
        max_bytes = RN1_BIDELTA_STREAM.check("max_bytes", max_bytes, model=True)
        super().__init__(
            RN1BideltaModel(endpoints, seed),
            [
                RN1EndpointModel(n, retry, endpoint_seed(seed, e), max_bytes, timeout=timeout)
                for e in range(n)
            ],
            dead_outputs,
        )

    def router_tag(self, key) -> str:
        return f"S{key[0]}"

    def router_points(self) -> list[CoverPoint]:
        """DeHon's routing rule per stage (:func:`router_cover_points`), with the bins the
        endpoints that can reach one group can meet."""
        net = self.net.net
        senders = senders_per_stage(net)
        return [
            p
            for j in range(net.stages)
            for p in router_cover_points(f"S{j}", net.mode(j), senders[j])
        ]

    def answers(self) -> tuple[str, ...]:
        return tuple(f"BLOCKED by stage {j}" for j in range(self.net.net.stages))


class RN1FatTreeStreamModel(_StreamModel):
    """The one-stage fat-tree (:class:`RN1FatTreeModel` of one stage: the 2-wide unit tree,
    64 processing nodes) with an :class:`RN1EndpointModel` of route rule ``"unit-tree"`` on
    every node, as :class:`~fattree.hdl.rn1.fat_tree.RN1FatTreeStream` (same parameters);
    the root's top links idle both ways."""

    def __init__(self, seed=1, retry="immediate", max_bytes=8):
        seed = RN1_FAT_TREE.check("seed", seed, model=True)
        retry = RN1_FAT_TREE.check("retry", retry, model=True)
        max_bytes = RN1_FAT_TREE.check("max_bytes", max_bytes, model=True)
        net = RN1FatTreeModel(1, None, seed)
        n = net.net.nodes
        super().__init__(
            net,
            [
                RN1EndpointModel(n, retry, endpoint_seed(seed, e), max_bytes, "unit-tree", e)
                for e in range(n)
            ],
        )

    def router_tag(self, key) -> str:
        """The router's layer in the unit tree: ``up``, ``down3``, ``down2``, ``down1``."""
        return key[-1].rstrip("0123456789").rstrip("_")

    def router_points(self) -> list[CoverPoint]:
        """DeHon's routing rule per layer (:func:`router_cover_points`), with the bins the
        endpoints' transmissions can meet at one group (:func:`route_senders`: a down3
        group sees at most three, from the quarters other than its direction's)."""
        paths = [
            (e, ENDPOINT_LINKS * e + k, [h])
            for e, ep in enumerate(self.endpoints)
            for k in range(ENDPOINT_LINKS)
            for h in ep.heads
        ]
        tags = route_senders(self.net, self.router_tag, paths)
        order = ("up", "down3", "down2", "down1")
        return [p for tag in order for p in router_cover_points(tag, tags[tag][0], tags[tag][1])]

    def answers(self) -> tuple[str, ...]:
        return tuple(f"BLOCKED by {layer}" for layer in ("up", "down3", "down2", "down1"))
