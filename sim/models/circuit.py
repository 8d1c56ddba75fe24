"""Cycle-exact reference model of the circuit-switched fat tree (Strumpen and Krishnamurthy).

:class:`RouterModel`, :class:`InterfaceModel` and :class:`CircuitTreeModel` step the same
registers as :mod:`fattree.hdl.circuit_router`, :mod:`fattree.hdl.network_interface` and
:mod:`fattree.hdl.circuit_tree`, with the same LFSRs (:class:`fattree.spec.lfsr.LFSRModel`),
the same arbitration and the same interface state machines, wired from the same
:class:`fattree.spec.topology.FatTree`. Each ``step`` takes the inputs of one cycle, returns
the outputs visible in that cycle (before the clock edge), then advances one clock.

The receivers' ``rx_ready`` is an input of :meth:`CircuitTreeModel.step` (default: every
receiver always ready). An interface whose received message is still waiting, and not taken
in the cycle a new message's first word arrives, rejects that message (docs/circuit_tree.md).
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field

from ...params import check_int_range, check_power_of_two
from ...spec.circuit import (
    BACKOFF_CAP,
    BACKOFF_SLOT,
    CIRCUIT_ROUTER,
    CIRCUIT_TREE,
    LFSR_WIDTH,
    SHARED_SEED,
    check_retry,
    lfsr_mask,
    route_bits,
    router_seed,
)
from ...spec.faults import check_faults, link_faults
from ...spec.lfsr import LFSRModel
from ...spec.topology import FatTree
from ...spec.traffic import HOT_SPOT, PATTERNS, destination
from ..coverage import Coverage, CoverPoint
from .driver import Driver

__all__ = [
    "RouterModel",
    "InterfaceModel",
    "CircuitTreeModel",
    "TreeOutputs",
    "PATTERNS",
    "traffic",
    "Driver",
    "run_model",
]

A, B, C, D = 0, 1, 2, 3
IDLE, FWD, DEAD = 0, 1, 2
_NO4, _NONE4 = (False,) * 4, (None,) * 4
N_IDLE, N_PEND, N_SEND, N_WAIT = 0, 1, 2, 3


@functools.cache
def _shared_states() -> tuple[int, ...]:
    """One period of the shared LFSR's states (seed ``SHARED_SEED``), cycle by cycle."""
    lfsr = LFSRModel(LFSR_WIDTH, seed=SHARED_SEED)
    states = []
    for _ in range((1 << LFSR_WIDTH) - 1):
        states.append(lfsr.state)
        lfsr.clock()
    return tuple(states)


class RouterModel:
    """Registers of one :class:`~fattree.hdl.circuit_router.CircuitRouter`.

    Outputs (registered): ``out_valid[o]``, ``out_data[o]`` forward on each port's outgoing
    link, ``bk_reject[i]``, ``bk_ack[i]`` backward on each port's incoming link.

    The LFSR bit of cycle ``t`` is bit 0 of the router's own LFSR (seed ``seed``), read as
    the parity of the shared LFSR's state under :func:`lfsr_mask` (the same bit, and what
    the tree's hardware does); a router with nothing to do in a cycle only counts it.
    """

    #: The run's :class:`~fattree.sim.coverage.Coverage` (None: not measured) and the
    #: router's level, which names its cover points (set by the tree).
    cover: Coverage | None = None
    level = 0

    def __init__(self, seed: int = 1):
        # As the hardware's CircuitRouter checks it (lfsr_mask is cached: a list is unhashable).
        self.seed = CIRCUIT_ROUTER.check("seed", seed, model=True)
        self.mask = lfsr_mask(seed)
        self.states = _shared_states()
        self.reset()

    def reset(self) -> None:
        self.cycle = 0
        self.quiet = True  # idle, nothing held, every output 0
        self.state = [IDLE] * 4
        self.route = [0] * 4
        self.busy = [0] * 4
        self.owner = [0] * 4
        self.out_valid = [0] * 4
        self.out_data = [0] * 4
        self.bk_reject = [0] * 4
        self.bk_ack = [0] * 4
        self._grant = self._reject = (False,) * 4
        self.up_bit = None

    @property
    def decisions(self) -> list:
        """What the last step decided, for tests: per input "grant"/"reject"/None."""
        return [
            "grant" if g else "reject" if r else None
            for g, r in zip(self._grant, self._reject, strict=True)
        ]

    @property
    def lfsr_bit(self) -> int:
        """Bit 0 of the router's LFSR in the current cycle."""
        return (self.states[self.cycle % len(self.states)] & self.mask).bit_count() & 1

    def _arbitrate(self, h0, h1, h2, h3, t0, t1, t2, t3, busy):
        """Per input: granted, to which output, rejected (headers ``h``, route bits ``t``)."""
        b0, b1 = busy[0], busy[1]
        g0 = g1 = g2 = g3 = False
        x0 = x1 = x2 = x3 = False
        o0 = o1 = o2 = o3 = 0
        # Up: a random up port (the LFSR bit), the other one if it is busy, A before B.
        up_a = h0 and not t0
        up_b = h1 and not t1
        if up_a or up_b:
            r = (self.states[self.cycle % len(self.states)] & self.mask).bit_count() & 1
            port_a = r ^ busy[C + r]
            port_b = (1 - r) ^ int(bool(busy[C + 1 - r]) or (up_a and port_a == 1 - r))
            if up_a:
                g0, o0 = True, C + port_a
            if up_b:
                g1, o1 = True, C + port_b
            self.up_bit = r
        else:
            self.up_bit = None
        # Down or across: a turn from the other down port wins over C, C over D.
        turn_to_a = h1 and t1  # B turns to A
        turn_to_b = h0 and t0  # A turns to B
        if turn_to_b:
            g0, o0, x0 = not b1, B, bool(b1)
        if turn_to_a:
            g1, o1, x1 = not b0, A, bool(b0)
        if h2:
            o = t2
            win = not busy[o] and not (turn_to_b if o else turn_to_a)
            x2 = not win
            if win:
                g2, o2 = True, o
        if h3:
            o = t3
            win = not busy[o] and not (turn_to_b if o else turn_to_a) and not (h2 and t2 == o)
            x3 = not win
            if win:
                g3, o3 = True, o
        return (g0, g1, g2, g3), (o0, o1, o2, o3), (x0, x1, x2, x3)

    def step(self, in_valid, in_data, out_reject, out_ack) -> None:
        # Unrolled over the four ports (the hot loop of every circuit-tree-paper run); the rules
        # are those of the paper as the docstring and docs/circuit_tree.md state them. A cycle
        # is one of three kinds, cheapest first: held paths forward, a reject or ack from
        # beyond releases paths, or a new message arrives and is arbitrated.
        v0, v1, v2, v3 = in_valid
        j0, j1, j2, j3 = out_reject
        k0, k1, k2, k3 = out_ack
        released_any = j0 or j1 or j2 or j3 or k0 or k1 or k2 or k3
        if self.quiet and not (v0 or v1 or v2 or v3 or released_any):
            # Nothing arrives and nothing is held: every register keeps its idle value (and
            # the last step, which left the router quiet, decided nothing).
            self.cycle += 1
            return
        s0, s1, s2, s3 = self.state
        # A header is the first word of a message at an idle input; bit 0 is its route bit.
        h0 = v0 and s0 == IDLE
        h1 = v1 and s1 == IDLE
        h2 = v2 and s2 == IDLE
        h3 = v3 and s3 == IDLE
        if h0 or h1 or h2 or h3:
            self._take_headers((h0, h1, h2, h3), in_valid, in_data, out_reject, out_ack)
        else:
            self._grant = self._reject = _NO4
            self.up_bit = None
            if released_any:
                self._release_paths(in_valid, in_data, out_reject, out_ack)
            else:
                self._forward_held(in_valid, in_data)
        self.cycle += 1

    def _forward_held(self, in_valid, in_data) -> None:
        """The common cycle of a busy router (over half of all router-cycles in the soak): no
        new message and nothing released, so routes, busy ports and owners stay, no backward
        pulse starts, a finished input (dead, valid low) goes idle, and each held output
        forwards its owner's word. Registers are never changed in place, so the lists that
        stay are kept as they are."""
        v0, v1, v2, v3 = in_valid
        s0, s1, s2, s3 = state = self.state
        if (
            (s0 == DEAD and not v0)
            or (s1 == DEAD and not v1)
            or ((s2 == DEAD and not v2) or (s3 == DEAD and not v3))
        ):
            self.state = [
                IDLE if s0 == DEAD and not v0 else s0,
                IDLE if s1 == DEAD and not v1 else s1,
                IDLE if s2 == DEAD and not v2 else s2,
                IDLE if s3 == DEAD and not v3 else s3,
            ]
        b0, b1, b2, b3 = self.busy
        n_valid, n_data = [0] * 4, [0] * 4
        if b0 or b1 or b2 or b3:
            owner = self.owner
            if b0:
                src = owner[0]
                if state[src] == FWD and in_valid[src]:
                    n_valid[0], n_data[0] = 1, in_data[src]
            if b1:
                src = owner[1]
                if state[src] == FWD and in_valid[src]:
                    n_valid[1], n_data[1] = 1, in_data[src]
            if b2:
                src = owner[2]
                if state[src] == FWD and in_valid[src]:
                    n_valid[2], n_data[2] = 1, in_data[src]
            if b3:
                src = owner[3]
                if state[src] == FWD and in_valid[src]:
                    n_valid[3], n_data[3] = 1, in_data[src]
            self.quiet = False
        else:  # nothing held: no output, quiet once every input is idle
            self.quiet = not any(self.state)
        self.out_valid, self.out_data = n_valid, n_data
        self.bk_reject, self.bk_ack = [0] * 4, [0] * 4

    def _release_paths(self, in_valid, in_data, out_reject, out_ack) -> None:
        """No new message, but a reject or ack from beyond: it ends the path through the
        input that forwards to that port and frees the port (routes and owners stay)."""
        state, busy, route = self.state, self.busy, self.route
        n_state = list(state)
        n_bk_reject, n_bk_ack = [0] * 4, [0] * 4
        for i in range(4):
            s = state[i]
            if s == FWD:
                rel_rej = out_reject[route[i]]
                rel_ack = out_ack[route[i]]
                if rel_rej or rel_ack:
                    n_state[i] = DEAD
                    n_bk_reject[i], n_bk_ack[i] = int(bool(rel_rej)), int(bool(rel_ack))
                    if self.cover is not None:
                        self.cover.hit(f"release/L{self.level}", "reject" if rel_rej else "ack")
            elif s == DEAD and not in_valid[i]:
                n_state[i] = IDLE
        n_busy = [0 if busy[o] and (out_reject[o] or out_ack[o]) else busy[o] for o in range(4)]
        n_valid, n_data = [0] * 4, [0] * 4
        owner = self.owner
        for o in range(4):
            if n_busy[o]:
                src = owner[o]
                if state[src] == FWD and in_valid[src]:
                    n_valid[o], n_data[o] = 1, in_data[src]
        self.state, self.busy = n_state, n_busy
        self.out_valid, self.out_data = n_valid, n_data
        self.bk_reject, self.bk_ack = n_bk_reject, n_bk_ack
        self.quiet = not (
            any(n_busy) or any(n_state) or any(n_valid) or any(n_bk_reject) or any(n_bk_ack)
        )

    def _take_headers(self, headers, in_valid, in_data, out_reject, out_ack) -> None:
        """A new message at one input or more: arbitrate (the other cycles need none), then
        the granted paths take their ports while the others release or forward as ever."""
        state, busy, route = self.state, self.busy, self.route
        h0, h1, h2, h3 = headers
        t0, t1, t2, t3 = in_data[0] & 1, in_data[1] & 1, in_data[2] & 1, in_data[3] & 1
        grant, grant_to, reject = self._arbitrate(h0, h1, h2, h3, t0, t1, t2, t3, busy)
        if self.cover is not None:
            self._cover_headers(self.cover, headers, (t0, t1, t2, t3), grant, grant_to, busy)
        g0, g1, g2, g3 = grant
        claim = [None] * 4
        if g0:
            claim[grant_to[0]] = 0
        if g1:
            claim[grant_to[1]] = 1
        if g2:
            claim[grant_to[2]] = 2
        if g3:
            claim[grant_to[3]] = 3
        n_state = list(state)
        n_route = list(route)
        x0, x1, x2, x3 = reject
        n_bk_reject = [1 if x0 else 0, 1 if x1 else 0, 1 if x2 else 0, 1 if x3 else 0]
        n_bk_ack = [0] * 4
        for i in range(4):
            if grant[i]:
                n_state[i], n_route[i] = FWD, grant_to[i]
            elif reject[i]:
                n_state[i] = DEAD
            elif state[i] == FWD:
                rel_rej = bool(out_reject[route[i]])
                rel_ack = bool(out_ack[route[i]])
                if rel_rej or rel_ack:
                    n_state[i] = DEAD
                    n_bk_reject[i], n_bk_ack[i] = int(rel_rej), int(rel_ack)
                    if self.cover is not None:
                        self.cover.hit(f"release/L{self.level}", "reject" if rel_rej else "ack")
            elif state[i] == DEAD and not in_valid[i]:
                n_state[i] = IDLE
        # Output registers: a claim takes the port, a reject or ack from beyond frees it.
        owner = self.owner
        n_busy, n_owner = list(busy), list(owner)
        n_valid, n_data = [0] * 4, [0] * 4
        for o in range(4):
            released = busy[o] and bool(out_reject[o] or out_ack[o])
            if claim[o] is not None:
                n_busy[o], n_owner[o] = 1, claim[o]
            elif released:
                n_busy[o] = 0
            if busy[o] and not released:
                src = owner[o]
                if state[src] == FWD and in_valid[src]:
                    n_valid[o], n_data[o] = 1, in_data[src]
        self._grant, self._reject = grant, reject
        self.state, self.route, self.busy, self.owner = n_state, n_route, n_busy, n_owner
        self.out_valid, self.out_data = n_valid, n_data
        self.bk_reject, self.bk_ack = n_bk_reject, n_bk_ack
        # Every header was granted (forwarding) or rejected (dead): not quiet.
        self.quiet = False

    def _cover_headers(self, cover: Coverage, headers, turn, grant, grant_to, busy) -> None:
        """The arbitration of this cycle's headers (route bits ``turn``): up the random port
        or the other, down or across granted, or rejected because the port is held or was
        claimed in this cycle by a turn (first) or by ``C`` (before ``D``)."""
        level = self.level
        cover.hit(f"heads/L{level}", str(sum(map(bool, headers))))
        r = self.up_bit
        for i in range(4):
            if not headers[i]:
                continue
            if i < C and not turn[i]:
                preferred = C + (r if i == A else 1 - r)
                cover.hit(f"up/L{level}", "preferred" if grant_to[i] == preferred else "other")
                continue
            o = (B if i == A else A) if i < C else turn[i]
            if grant[i]:
                cover.hit(f"down/L{level}", "granted")
            elif busy[o]:
                cover.hit(f"down/L{level}", "rejected: held")
            else:
                cover.hit(f"down/L{level}", "rejected: claimed")
                by_c = i == D and headers[C] and turn[C] == o and grant[C]
                cover.hit(f"claims/L{level}", "C over D" if by_c else "turn over parent")


class InterfaceModel:
    """Registers of one :class:`~fattree.hdl.network_interface.NetworkInterface`."""

    #: The run's :class:`~fattree.sim.coverage.Coverage`, or None (not measured).
    cover: Coverage | None = None

    def __init__(self, node, leaves, width=1, length=1, retry="immediate", seed=1):
        self.leaves = check_power_of_two("leaves", leaves, 2)
        self.node = check_int_range("node", node, 0, leaves - 1)
        self.width = check_int_range("width", width, 1)
        self.length = check_int_range("length", length, 1)
        self.retry = check_retry(retry)
        self.seed = check_int_range("seed", seed, 1, (1 << LFSR_WIDTH) - 1)
        self._backoff = self.retry == "backoff"
        # Where a received word enters the shift buffer (the last word ends up on top).
        self._top = (length - 1) * width
        self.reset()

    def reset(self) -> None:
        self.lfsr = LFSRModel(LFSR_WIDTH, seed=self.seed)
        self.state = N_IDLE
        self.route: list[int] = []
        self.dest = 0
        self.data = 0
        self.last = 0
        self.index = 0
        self.attempts = 0
        self.wait = 0
        self.up_valid = 0
        self.up_data = 0
        self.tx_done = 0
        self.tx_reject = 0
        self.was_valid = 0
        self.dead = 0
        self.buffer = 0
        self.rx_valid = 0
        self.rx_data = 0
        self.down_ack = 0
        self.down_reject = 0
        #: Messages this interface rejected because its receive stream was full.
        self.rx_rejects = 0

    @property
    def tx_ready(self) -> int:
        return int(self.state == N_IDLE)

    @property
    def busy(self) -> int:
        return int(self.state in (N_SEND, N_WAIT))

    def _word(self, j: int) -> int:
        if j <= self.last - self.length:
            return self.route[j]
        k = j - (self.last - self.length + 1)
        return (self.data >> (k * self.width)) & ((1 << self.width) - 1)

    def step(
        self, tx_valid, tx_dest, tx_data, go, up_reject, up_ack, down_valid, down_data, rx_ready=1
    ):
        self.tx_done = 0
        self.tx_reject = 0
        state = self.state
        if state == N_IDLE:
            if tx_valid:
                if tx_dest == self.node:
                    raise ValueError(f"node {self.node} cannot send a message to itself")
                self.route = route_bits(self.node, tx_dest)
                self.dest = tx_dest
                self.last = len(self.route) - 1 + self.length
                self.data = tx_data
                self.attempts = 0
                self.wait = 0
                self.state = N_PEND
        elif state == N_PEND:
            if self.retry == "immediate":
                start = True
            elif self.retry == "round":
                start = bool(go)
            else:
                start = self.wait == 0
                if self.wait:
                    self.wait -= 1
            if self.cover is not None and self.retry != "immediate":
                self.cover.hit("retry", "start" if start else "wait")
            if start:
                self.up_valid, self.up_data = 1, self._word(0)
                self.index = 1
                self.state = N_SEND
        else:
            if up_reject:
                self.up_valid, self.up_data = 0, 0
                self.tx_reject = 1
                if self.cover is not None:
                    self.cover.hit("fate", "rejected")
                self.state = N_PEND
                exp = self.attempts + int(self.attempts != BACKOFF_CAP)
                if self.attempts != BACKOFF_CAP:
                    self.attempts += 1
                if self.retry == "backoff":
                    mask = (1 << exp) - 1
                    self.wait = (self.lfsr.state & ((1 << BACKOFF_CAP) - 1) & mask) * BACKOFF_SLOT
            elif state == N_WAIT and up_ack:
                self.tx_done = 1
                self.state = N_IDLE
                if self.cover is not None:
                    self._cover_done(self.cover)
            elif state == N_SEND:
                if self.index <= self.last:
                    self.up_valid, self.up_data = 1, self._word(self.index)
                    self.index += 1
                else:
                    self.up_valid, self.up_data = 0, 0
                    self.state = N_WAIT
        # Receive: a message waiting in rx that is not taken now makes the interface full.
        held = self.rx_valid  # a received message waiting in rx at this cycle
        full = held and not rx_ready
        if rx_ready:
            self.rx_valid = 0
        self.down_ack = 0
        self.down_reject = 0
        if down_valid:
            if self.length == 1:
                self.buffer = down_data
            else:
                self.buffer = (self.buffer >> self.width) | (down_data << self._top)
            if not self.was_valid and self.cover is not None:
                self.cover.hit("receive", "full" if full else "leaving" if held else "empty")
            if not self.was_valid and full:
                self.down_reject, self.dead = 1, 1
                self.rx_rejects += 1
        else:
            if self.was_valid and not self.dead:
                self.rx_valid, self.rx_data, self.down_ack = 1, self.buffer, 1
            self.dead = 0
        self.was_valid = 1 if down_valid else 0
        if self._backoff:
            self.lfsr.clock()

    def _cover_done(self, cover: Coverage) -> None:
        """A message done: at its first attempt or after rejections, and the level where it
        turned (whose acknowledgement path brought the fate back)."""
        cover.hit("fate", "done")
        cover.hit("attempts", "retried" if self.attempts else "first")
        cover.hit("turn", f"L{(self.dest ^ self.node).bit_length() - 1}")


@dataclass(slots=True)
class TreeOutputs:
    """Per-node outputs of :class:`CircuitTreeModel` in one cycle."""

    tx_ready: list[int]
    tx_done: list[int]
    tx_reject: list[int]
    rx_valid: list[int]
    rx_data: list[int]
    events: list = field(default_factory=list)


class CircuitTreeModel:
    """The whole network, cycle by cycle (see :class:`fattree.hdl.circuit_tree.CircuitFatTree`)."""

    #: What :meth:`start_coverage` counts into (None: not counted).
    coverage: Coverage | None = None

    def __init__(self, leaves=16, width=8, length=2, seed=1, retry="immediate", faults=""):
        self.leaves = CIRCUIT_TREE.check("leaves", leaves, model=True)
        self.width = CIRCUIT_TREE.check("width", width, model=True)
        self.length = CIRCUIT_TREE.check("length", length, model=True)
        self.seed = CIRCUIT_TREE.check("seed", seed, model=True)
        self.retry = CIRCUIT_TREE.check("retry", retry, model=True)
        #: Dead links and routers, stuck-at wires (fattree.spec.faults).
        self.faults = check_faults(faults, leaves, width)
        self.h = leaves.bit_length() - 1
        tree = FatTree(self.h, 2)
        self.routers = {
            (lv, t): RouterModel(router_seed(seed, lv, t))
            for lv in range(self.h)
            for t in range(leaves // 2)
        }
        self.nis = [
            InterfaceModel(n, leaves, width, length, self.retry, router_seed(seed, self.h, n))
            for n in range(leaves)
        ]
        # peer[(router key, port)] = ("router", key, port) or ("ni", node); the link between.
        self.peer: dict = {}
        for n in range(leaves):
            t, p = tree.node_switch(n)
            self.peer[(0, t), p] = ("ni", n)
        for lv in tree.link_levels():
            for t in range(leaves // 2):
                for up in (0, 1):
                    _, parent, down = tree.up_neighbour(lv, t, up)
                    self.peer[(lv, t), C + up] = ("router", (lv + 1, parent), down)
                    self.peer[(lv + 1, parent), down] = ("router", (lv, t), C + up)
        self.ni_port = {n: ((0, n // 2), n % 2) for n in range(leaves)}
        # The same wiring as direct references, for step: each router's input lists
        # (in_valid, in_data, out_reject, out_ack), and where each block's outputs go.
        self._router_list = list(self.routers.values())
        inputs = {key: ([0] * 4, [0] * 4, [0] * 4, [0] * 4) for key in self.routers}
        self._inputs_of = inputs
        self._inputs = [inputs[key] for key in self.routers]
        self._fanout = {id(r): [] for r in self._router_list}
        self._ni_fanout = [None] * leaves
        for (key, p), peer in self.peer.items():
            # Router `key` port p is fed by `peer`.
            if peer[0] == "ni":
                self._ni_fanout[peer[1]] = (*inputs[key], p)
            else:
                self._fanout[id(self.routers[peer[1]])].append((peer[2], *inputs[key], p))
        self._ni_router = [(self.routers[key], p) for key, p in self.ni_port.values()]
        # Per router: its step, its input lists, and where its outputs go.
        self._step_table = [
            (r, r.step, lists, self._fanout[id(r)])
            for r, lists in zip(self._router_list, self._inputs, strict=True)
        ]
        self._faulty = self._fault_links(tree)
        self.go = 0
        self.cycle = 0
        self._apply_faults()

    def _fault_links(self, tree) -> list:
        """Per faulty link direction ``(fault, sender, port, receiver, port)``, a block being
        a router key or ``("ni", node)``, from the definitions' names of the links."""
        found = []
        for link, fault in link_faults(self.faults, self.leaves, self.width).items():
            lv, t, p = link.level, link.switch, link.port
            if link.direction in ("up", "down"):
                _, parent, down = tree.up_neighbour(lv, t, p)
                ends = [((lv, t), C + p), ((lv + 1, parent), down)]
            else:
                ends = [(("ni", 2 * t + p), 0), ((0, t), p)]
            if link.direction in ("down", "eject"):
                ends.reverse()
            found.append((fault, *ends[0], *ends[1]))
        return found

    def _apply_faults(self, ni_inputs=None) -> None:
        """Overwrite what the faulty links' receivers (forward wires) and senders (backward
        wires) read: into the routers' input lists, or with ``ni_inputs`` (this cycle's
        interface inputs) into those."""
        for fault, src, p, dst, q in self._faulty:
            if ni_inputs is not None:
                if dst[0] == "ni":  # eject: the interface reads valid and data
                    r = self.routers[src]
                    ni_inputs[dst[1]][2:] = fault.forward(r.out_valid[p], r.out_data[p])
                if src[0] == "ni":  # inject: the interface reads reject and ack
                    r = self.routers[dst]
                    ni_inputs[src[1]][:2] = fault.backward(r.bk_reject[q], r.bk_ack[q])
                continue
            if dst[0] != "ni":
                if src[0] == "ni":
                    ni = self.nis[src[1]]
                    valid, data = ni.up_valid, ni.up_data
                else:
                    valid, data = self.routers[src].out_valid[p], self.routers[src].out_data[p]
                iv, idata, _, _ = self._inputs_of[dst]
                iv[q], idata[q] = fault.forward(valid, data)
            if src[0] != "ni":
                if dst[0] == "ni":
                    ni = self.nis[dst[1]]
                    reject, ack = ni.down_reject, ni.down_ack
                else:
                    reject, ack = self.routers[dst].bk_reject[q], self.routers[dst].bk_ack[q]
                _, _, orej, oack = self._inputs_of[src]
                orej[p], oack[p] = fault.backward(reject, ack)

    def cover_points(self) -> list[CoverPoint]:
        """The situations of the paper's rules this tree can meet, per router level and for
        the interfaces (docs/circuit_tree.md, "Coverage")."""
        h, points = self.h, []
        for lv in range(h):
            top = lv == h - 1  # no parents: headers only from the children, who turn
            points += [
                CoverPoint(
                    f"heads/L{lv}",
                    ("1", "2") if top else ("1", "2", "3", "4"),
                    "headers arriving at one router in one cycle",
                ),
                CoverPoint(
                    f"down/L{lv}",
                    # At the top only the other child turns into a port, and only while it
                    # holds no path: nothing holds or claims it there.
                    ("granted",) if top else ("granted", "rejected: held", "rejected: claimed"),
                    "a header going down or across finds its port free, held by a path, or "
                    "claimed in the same cycle (rejected back to its sender)",
                ),
                CoverPoint(
                    f"release/L{lv}",
                    ("ack", "reject"),
                    "a path ended by the acknowledgement or the reject from beyond it",
                ),
            ]
            if not top:
                points += [
                    CoverPoint(
                        f"up/L{lv}",
                        ("preferred", "other"),
                        "a header goes up the port the LFSR bit picks, or the other one",
                    ),
                    CoverPoint(
                        f"claims/L{lv}",
                        ("turn over parent", "C over D"),
                        "two headers claim one down port in one cycle (the paper's "
                        "collision): a turn first, then C before D",
                    ),
                ]
        points += [
            CoverPoint("fate", ("done", "rejected"), "an attempt acknowledged or rejected"),
            CoverPoint(
                "attempts",
                ("first", "retried"),
                "a message done at its first attempt, or after rejections",
            ),
            CoverPoint(
                "turn",
                tuple(f"L{lv}" for lv in range(h)),
                "messages done per level they turned at: every level's acknowledgement path",
            ),
            CoverPoint(
                "receive",
                ("empty", "leaving", "full"),
                "a message arriving at a receive stream that is empty, being taken in that "
                "cycle, or full (rejected)",
            ),
        ]
        if self.retry != "immediate":
            points.append(
                CoverPoint(
                    "retry",
                    ("start", "wait"),
                    f"a pending message starts, or waits ({self.retry} retry)",
                )
            )
        return points

    def start_coverage(self) -> Coverage:
        """Count hits in :meth:`cover_points` from now on; the :class:`Coverage` to read."""
        coverage = Coverage(self.cover_points())
        for (lv, _), router in self.routers.items():
            router.cover, router.level = coverage, lv
        for ni in self.nis:
            ni.cover = coverage
        self.coverage = coverage
        return coverage

    def clone(self):
        """An independent copy in the same state (its coverage too), to try traffic on; the
        LFSR state table, shared and never written, is not copied."""
        states = _shared_states()
        return copy.deepcopy(self, {id(states): states})

    def reset(self) -> None:
        for r in self.routers.values():
            r.reset()
        for ni in self.nis:
            ni.reset()
        for lists in self._inputs:
            for values in lists:
                values[:] = [0] * 4
        self.go = 0
        self.cycle = 0
        self._apply_faults()

    def step(self, tx_valid, tx_dest, tx_data, rx_ready=None) -> TreeOutputs:
        """One cycle: per node the transmit stream's valid, dest and data and the receive
        stream's ready (``None``: every receiver ready)."""
        nis = self.nis
        if rx_ready is None:
            rx_ready = [1] * self.leaves
        out = TreeOutputs(
            tx_ready=[1 if ni.state == N_IDLE else 0 for ni in nis],
            tx_done=[ni.tx_done for ni in nis],
            tx_reject=[ni.tx_reject for ni in nis],
            rx_valid=[ni.rx_valid for ni in nis],
            rx_data=[ni.rx_data for ni in nis],
        )
        # Every block's inputs are its neighbours' registers of this cycle (all outputs are
        # registered): the interfaces' are read now, the routers' were written into their
        # input lists at the end of the previous step.
        ni_inputs = [
            (r.bk_reject[p], r.bk_ack[p], r.out_valid[p], r.out_data[p]) for r, p in self._ni_router
        ]
        if self._faulty:
            ni_inputs = [list(x) for x in ni_inputs]
            self._apply_faults(ni_inputs)
        go = self.go
        self.go = int(not any([ni.state == N_SEND or ni.state == N_WAIT for ni in nis]))
        changed = []
        for router, step, inputs, fanout in self._step_table:
            if router.quiet:
                step(*inputs)
                if router.quiet:
                    continue
            else:
                step(*inputs)
            changed.append((router, fanout))
        # Each interface steps, then its outputs become its leaf router's next inputs.
        for ni, (iv, idata, orej, oack, q), v, d, x, (reject, ack, valid, data), ready in zip(
            nis, self._ni_fanout, tx_valid, tx_dest, tx_data, ni_inputs, rx_ready, strict=True
        ):
            ni.step(v, d, x, go, reject, ack, valid, data, ready)
            iv[q], idata[q], oack[q] = ni.up_valid, ni.up_data, ni.down_ack
            orej[q] = ni.down_reject
        # Next cycle's router inputs (a quiet router's outputs stay 0: nothing to write).
        for router, fanout in changed:
            valid, data = router.out_valid, router.out_data
            reject, ack = router.bk_reject, router.bk_ack
            for p, iv, idata, orej, oack, q in fanout:
                iv[q], idata[q], orej[q], oack[q] = valid[p], data[p], reject[p], ack[p]
        if self._faulty:
            self._apply_faults()
        self.cycle += 1
        return out


# -- traffic and a model-only run ---------------------------------------------------------------


def traffic(
    pattern: str, leaves: int, width: int, length: int, rng, *, messages: int = 1, shift: int = 1
) -> list[list[tuple[int, int]]]:
    """Per node, the messages ``(dest, data)`` it sends, in order.

    ``random``: ``messages`` per node to random other nodes; ``transpose``, ``bit-reversal``,
    ``shift`` (by ``shift``): one per node (none for a node mapped to itself); ``hotspot``:
    every other node sends ``messages`` to node 0. Data is random (``width * length`` bits).
    """
    h = leaves.bit_length() - 1
    bits = width * length
    queues: list[list[tuple[int, int]]] = [[] for _ in range(leaves)]

    def data():
        return rng.getrandbits(bits)

    for p in range(leaves):
        if pattern == "random":
            for _ in range(messages):
                q = rng.randrange(leaves - 1)
                queues[p].append((q + (q >= p), data()))
        elif pattern in ("transpose", "bit-reversal", "shift"):
            q = destination(pattern, p, h, shift=shift)
            if q != p:
                queues[p].append((q, data()))
        elif pattern == "hotspot":
            if p != HOT_SPOT:
                queues[p].extend((HOT_SPOT, data()) for _ in range(messages))
        else:
            raise ValueError(f"pattern must be one of {', '.join(PATTERNS)}, not {pattern!r}")
    return queues


def run_model(
    model: CircuitTreeModel, queues, *, max_cycles: int = 1_000_000, rx_ready=None, delays=None
) -> dict:
    """Run the model alone until every message is acknowledged and taken; cycles and counts.

    ``rx_ready``: ``None`` (every receiver always ready) or a function of the cycle number
    giving the receivers' ready, one per node. ``delays``: per node, cycles from the start
    before it offers its first message (default none). Also runs the fast tree's model.
    """
    driver = Driver(queues)
    total = sum(len(q) for q in queues)
    done = rejects = 0
    received = []
    start = model.cycle
    while done < total or len(received) < total:
        if model.cycle >= max_cycles:
            raise RuntimeError(f"{total - done} messages pending after {max_cycles} cycles")
        valid, dest, data = driver.inputs()
        if delays is not None:
            age = model.cycle - start
            valid = [v if age >= d else 0 for v, d in zip(valid, delays, strict=True)]
        ready = None if rx_ready is None else rx_ready(model.cycle)
        out = model.step(valid, dest, data, ready)
        driver.taken([r & v for r, v in zip(out.tx_ready, valid, strict=True)])
        done += sum(out.tx_done)
        rejects += sum(out.tx_reject)
        received += [
            (n, out.rx_data[n])
            for n in range(model.leaves)
            if out.rx_valid[n] and (ready is None or ready[n])
        ]
    return {
        "cycles": model.cycle,
        "messages": total,
        "rejects": rejects,
        "rx_rejects": sum(ni.rx_rejects for ni in model.nis),
        "received": received,
        "sent": driver.sent,
    }
