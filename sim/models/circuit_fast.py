"""Cycle-exact reference model of the fast circuit tree (``circuit-tree``).

Written from the rules of :mod:`fattree.spec.circuit_fast` alone: one cycle per hop, a circuit
held while its message passes, a head acknowledged by the mirror unless it finds its down
port taken (it is dropped), and ``window`` messages in flight per node. :class:`RouterFastModel`,
:class:`InterfaceFastModel` and :class:`CircuitFastTreeModel` keep the state those rules name
(holds, dead inputs, output registers, slots, the receive store) and, for the ``ack`` wires,
the cycles each head owns: the value of a cycle is known once the head is dropped, accepted or
rejected, or once the output it was granted has its own fate (the mirror). Two heads owning
one cycle of one ``ack`` wire is a broken model: :class:`AckCollision`.

:meth:`CircuitFastTreeModel.step` has the calling convention of
:class:`fattree.sim.models.circuit.CircuitTreeModel` (the lock-step check
:class:`fattree.sim.checks.circuit_tree.CircuitTreeCheck` and the drivers use either): the
inputs of one cycle in, the outputs visible in that cycle (before the clock edge) out, then one
clock. ``rx_data`` is None (not defined) in a cycle ``rx_valid`` is 0. An attempt sends the
message its slot held when it was picked, to its last word, even if its fate frees the slot
(``length`` above ``F``) and a new message is stored there before that word leaves.

Faults (``faults``, the spec's "Faults"): every link direction's value is what its receiver
reads, the sender's word changed as the fault says; a sender reads a stuck or dead ``ack``
in every cycle, and 0 in a cycle nobody owns (a head lost on a link that carries nothing has
no owner downstream). Without faults a cycle without an owner where a fate is due is a broken
model (:class:`AckCollision`); with them it reads 0.
"""

from __future__ import annotations

import copy

from ...spec.circuit import lfsr_mask, router_seed
from ...spec.circuit_fast import (
    CIRCUIT_TREE_FAST,
    DOWN,
    FAULT_WIRES,
    UP,
    fate_delay,
    mirror_delay,
    subtree,
)
from ...spec.faults import check_faults, link_faults
from ...spec.topology import FatTree, Link
from ..coverage import Coverage, CoverPoint
from .circuit import TreeOutputs, _shared_states

__all__ = [
    "CircuitFastTreeModel",
    "RouterFastModel",
    "InterfaceFastModel",
    "AckCollision",
    "TreeOutputs",
]

A, B, C, D = 0, 1, 2, 3
FREE, READY, SENT = 0, 1, 2


class AckCollision(AssertionError):
    """Two heads own one cycle of one ``ack`` wire, or a fate has no head: the model is
    broken (the rules make it impossible)."""


class Acks:
    """The backward wires of every link direction.

    ``owned[link]`` maps each cycle a head owns on that link's ``ack`` to its value, ``None``
    until known; a mirror due at cycle ``c`` copies the value of its output link at ``c`` to
    its input link's owned cycle. A cycle nobody owns reads 0. ``stuck[link]`` is what a
    faulty link's sender reads in every cycle; ``strict`` (no faults): a mirror or a fate
    that finds no owner is a broken model.
    """

    def __init__(self, links: int, stuck: dict[int, int] | None = None, strict: bool = True):
        self.owned: list[dict[int, int | None]] = [{} for _ in range(links)]
        self.mirrors: dict[int, list[tuple[int, int, int]]] = {}
        self.stuck = stuck or {}
        self.strict = strict

    def own(self, link: int, cycle: int, value: int | None = None) -> None:
        owned = self.owned[link]
        if cycle in owned:
            raise AckCollision(f"two acknowledgements on link {link} in cycle {cycle}")
        owned[cycle] = value

    def mirror(self, out_link: int, at: int, in_link: int, cycle: int) -> None:
        """The head on ``in_link`` owns ``cycle`` there; its value is ``out_link``'s at ``at``."""
        self.own(in_link, cycle)
        self.mirrors.setdefault(at, []).append((out_link, in_link, cycle))

    def resolve(self, cycle: int) -> None:
        """The mirrors due at ``cycle`` (every value at ``cycle`` is known by then)."""
        for out_link, in_link, at in self.mirrors.pop(cycle, ()):
            value = self.take(out_link, cycle)
            if value is None:
                if self.strict:
                    raise AckCollision(f"link {out_link} has no fate in cycle {cycle}")
                value = 0  # lost on a link that carries nothing: nobody owns it
            self.owned[in_link][at] = value

    def take(self, link: int, cycle: int) -> int | None:
        """The value on ``link`` at ``cycle`` for its reader (its sender); ``None`` if nobody
        owns it and the link is not stuck."""
        value = self.owned[link].pop(cycle, None)
        return self.stuck.get(link, value)


class RouterFastModel:
    """Router ``SW(level, switch)``: per input its hold and dead flag; its output registers
    are the next values of its output links. ``inputs`` and ``outputs`` are link indices per
    port (``None``: no link, the top level's up ports), ``f_in``/``f_out`` their mirror
    delays."""

    def __init__(self, level: int, switch: int, h: int, seed: int):
        self.level, self.switch = level, switch
        self.sub = subtree(level, switch)
        self.mask = lfsr_mask(router_seed(seed, level, switch))
        self.states = _shared_states()
        self.inputs: list[int | None] = [None] * 4
        self.outputs: list[int | None] = [None] * 4
        down_in = mirror_delay(h, DOWN, level + 1) if level + 1 < h else None
        up_out = mirror_delay(h, UP, level + 1) if level + 1 < h else None
        self.f_in = [mirror_delay(h, UP, level)] * 2 + [down_in] * 2
        self.f_out = [mirror_delay(h, DOWN, level)] * 2 + [up_out] * 2
        self.reset()

    #: With faults a body word may enter an input that holds nothing (a link whose valid is
    #: stuck at 1): it goes nowhere. Without, that is a broken model.
    lenient = False
    #: The run's :class:`~fattree.sim.coverage.Coverage`, or None (not measured).
    cover: Coverage | None = None

    def reset(self) -> None:
        self.hold: list[int | None] = [None] * 4
        self.dead = [False] * 4
        #: Heads this router dropped.
        self.drops = 0

    def lfsr_bit(self, cycle: int) -> int:
        """Bit 0 of the router's LFSR at ``cycle`` (its seed at cycle 0)."""
        return (self.states[cycle % len(self.states)] & self.mask).bit_count() & 1

    def step(self, cycle: int, fwd: list, nxt: list, acks: Acks) -> None:
        """Cycle ``cycle``: read the input links in ``fwd``, write the output registers (the
        output links' values at ``cycle + 1``) into ``nxt``; acknowledgements into ``acks``."""
        ins, outs, hold, dead = self.inputs, self.outputs, self.hold, self.dead
        vals = [None if link is None else fwd[link] for link in ins]
        busy = [False] * 4
        heads = []
        for i in range(4):
            v = vals[i]
            if v is None:
                hold[i] = None
            elif v[0]:
                hold[i], dead[i] = None, False
                heads.append(i)
            elif not dead[i]:
                o = hold[i]
                if o is None:
                    if self.lenient:
                        continue
                    raise AssertionError(f"SW({self.level}, {self.switch}): body word unheld")
                busy[o] = True
                nxt[outs[o]] = (0, v[1], v[2])
        if heads:
            self._heads(cycle, heads, vals, busy, nxt, acks)

    def _heads(self, cycle, heads, vals, busy, nxt, acks) -> None:
        """Rules 2-4 and 6 for the heads of this cycle."""
        x = self.lfsr_bit(cycle)
        level, ins, outs = self.level, self.inputs, self.outputs
        taken = list(busy)  # busy, or granted in this cycle
        winner: list[int | None] = [None] * 4  # the input granted each output in this cycle
        order = (A, B, C, D) if x == 0 else (A, B, D, C)
        cover = self.cover
        if cover is not None:
            cover.hit(f"heads/L{level}", str(len(heads)))
        for i in order:
            if i not in heads:
                continue
            _, dest, data = vals[i]
            f_in = self.f_in[i]
            if i < C and dest >> (level + 1) != self.sub:
                o = preferred = C + (x ^ i)
                if busy[o]:
                    o ^= 1
                if taken[o] or outs[o] is None:
                    raise AssertionError(f"SW({level}, {self.switch}): no up port")
                if cover is not None:
                    cover.hit(f"up/L{level}", "preferred" if o == preferred else "other")
            else:
                o = (dest >> level) & 1
                if cover is not None:
                    self._cover_down(cover, o, i, busy, winner)
                if taken[o]:
                    self.dead[i] = True
                    self.drops += 1
                    acks.own(ins[i], cycle + f_in, 0)
                    continue
            taken[o] = True
            winner[o] = i
            self.hold[i] = o
            nxt[outs[o]] = (1, dest, data)
            acks.mirror(outs[o], cycle + 1 + self.f_out[o], ins[i], cycle + f_in)

    def _cover_down(self, cover: Coverage, o: int, i: int, busy: list, winner: list) -> None:
        """A head wanting down port ``o``: free, held by a circuit, or claimed in this cycle
        by ``winner[o]`` (a turning head, or the other parent first by the LFSR bit)."""
        level = self.level
        if busy[o]:
            cover.hit(f"down/L{level}", "dropped: held")
        elif winner[o] is None:
            cover.hit(f"down/L{level}", "granted")
        else:
            cover.hit(f"down/L{level}", "dropped: claimed")
            win = winner[o]  # inputs are taken children first: a parent never beats a child
            if win < C:
                kind = "turn over turn" if i < C else "turn over parent"
            else:
                kind = f"{'CD'[win - C]} over {'CD'[i - C]}"
            cover.hit(f"claims/L{level}", kind)


class InterfaceFastModel:
    """The interface of one node: ``window`` slots, the round-robin pointer, the word on the
    inject link, each attempt's slot by the cycle its head was on the inject link, and the
    receive store."""

    #: The run's :class:`~fattree.sim.coverage.Coverage`, or None (not measured).
    cover: Coverage | None = None

    def __init__(self, node: int, h: int, width: int, length: int, window: int):
        self.node, self.width, self.length, self.window = node, width, length, window
        self.fate = fate_delay(h)
        self.inject = self.eject = 0  # link indices, set by the tree
        self.reset()

    def reset(self) -> None:
        self.state = [FREE] * self.window
        self.message: list[tuple[int, int] | None] = [None] * self.window
        self.tries = [0] * self.window  # attempts of each slot's message so far
        self.last = self.window - 1  # slot 0 is the first after reset
        self.sending: tuple[int, int] | None = None  # (dest, data) on the inject link
        self.word = 0  # index of the word on the inject link
        self.flight: dict[int, int] = {}  # head cycle on the inject link -> slot
        self.tx_done = self.tx_reject = 0
        self.stored: int | None = None
        self.collect: list[int] | None = None  # words of the accepted message arriving
        #: Heads sent (attempts), fates 0 (attempts not acknowledged), fates 1 (messages done).
        self.attempts = self.unacknowledged = self.done = 0
        #: Heads this interface dropped because its store was full; messages taken from rx.
        self.rx_rejects = self.received = 0

    def _word(self, data: int) -> int:
        return (data >> (self.word * self.width)) & ((1 << self.width) - 1)

    def step(self, cycle, tx_valid, tx_dest, tx_data, rx_ready, fwd, nxt, acks) -> tuple:
        """One cycle; returns its outputs ``(tx_ready, tx_done, tx_reject, rx_valid,
        rx_data)`` and writes the inject link's next value into ``nxt``."""
        state = self.state
        tx_ready = int(FREE in state)
        out = [tx_ready, self.tx_done, self.tx_reject]
        # Fate of the attempt whose head was on the inject link F cycles ago.
        ack = acks.take(self.inject, cycle)
        slot = self.flight.pop(cycle - self.fate, None)
        if acks.strict and (ack is None) != (slot is None):
            raise AckCollision(f"node {self.node}: fate {ack} for slot {slot} at {cycle}")
        ack = ack or 0  # with faults: a head lost on its way has no owner; a stuck ack is read
        self.tx_done = self.tx_reject = 0
        # Send: the next READY slot after the last picked, else this cycle's handshake.
        store = state.index(FREE) if tx_valid and tx_ready else None
        if store is not None:
            self.message[store] = (tx_dest, tx_data)
            self.tries[store] = 0
        elif tx_valid and self.cover is not None:
            self.cover.hit("window", "full")
        if self.sending is None or self.word == self.length - 1:
            pick = None
            for k in range(1, self.window + 1):
                s = (self.last + k) % self.window
                if state[s] == READY:
                    pick = s
                    break
            if store is not None:
                state[store] = READY
                if pick is None:
                    pick = store
            self.sending = None
            if pick is not None:
                state[pick] = SENT
                self.tries[pick] += 1
                self.last, self.sending, self.word = pick, self.message[pick], 0
                self.flight[cycle + 1] = pick
                self.attempts += 1
        else:
            self.word += 1
            if store is not None:
                state[store] = READY
        if self.sending is not None:
            dest, data = self.sending
            nxt[self.inject] = (int(self.word == 0), dest, self._word(data))
        if slot is not None:
            state[slot] = FREE if ack else READY
            self.tx_reject, self.tx_done = 1 - ack, ack
            self.unacknowledged += 1 - ack
            self.done += ack
            if self.cover is not None:
                self._cover_fate(self.cover, slot, ack)
        return (*out, *self._receive(cycle, rx_ready, fwd[self.eject], acks))

    def _cover_fate(self, cover: Coverage, slot: int, ack: int) -> None:
        """An attempt's fate; a message done: at its first attempt or a later one, and the
        level where it turned (whose acknowledgement path brought the fate back)."""
        cover.hit("fate", "done" if ack else "rejected")
        if ack:
            cover.hit("attempts", "first" if self.tries[slot] == 1 else "retried")
            dest = self.message[slot][0]
            cover.hit(
                "turn", "self" if dest == self.node else f"L{(dest ^ self.node).bit_length() - 1}"
            )

    def _receive(self, cycle, rx_ready, word, acks) -> tuple[int, int]:
        """The eject link's word at ``cycle`` and the store: ``(rx_valid, rx_data)``."""
        stored = self.stored
        arrived = None  # the accepted message whose last word is here
        if word is not None:
            head, _, data = word
            if head:
                accept = stored is None or rx_ready
                acks.own(self.eject, cycle + 1, int(accept))
                if self.cover is not None:
                    self.cover.hit(
                        "receive", "empty" if stored is None else "leaving" if accept else "full"
                    )
                self.collect = [] if accept else None
                self.rx_rejects += not accept
            if self.collect is not None:
                self.collect.append(data)
                if len(self.collect) == self.length:
                    arrived = sum(w << (k * self.width) for k, w in enumerate(self.collect))
                    self.collect = None
        if stored is not None:
            valid, data = 1, stored
        elif arrived is not None:
            valid, data = 1, arrived
        else:
            valid, data = 0, None  # not defined while rx_valid is 0 (the check skips it)
        taken = valid and rx_ready
        self.received += bool(taken)
        if stored is not None and rx_ready:
            self.stored = None
        if arrived is not None and not (stored is None and rx_ready):
            if self.stored is not None:
                raise AssertionError(f"node {self.node}: a message over a stored one")
            self.stored = arrived
        return valid, data


def _down_bins(level: int, top: bool) -> tuple[str, ...]:
    """What a head wanting a down port can find at ``level``. At the top a down port is wanted
    only by the one child turning into it, whose circuits end before its next head: nothing
    holds or claims it, except a node's own message at level 0 (a tree of 2 nodes)."""
    if not top:
        return ("granted", "dropped: held", "dropped: claimed")
    return ("granted", "dropped: claimed") if level == 0 else ("granted",)


class CircuitFastTreeModel:
    """The whole fast circuit tree, cycle by cycle: ``leaves`` nodes, messages of ``length``
    words of ``width`` bits, routers' LFSRs from ``seed``, ``window`` messages per node,
    dead links and routers and stuck wires ``faults`` (:mod:`fattree.spec.faults`)."""

    #: What :meth:`start_coverage` counts into (None: not counted).
    coverage: Coverage | None = None

    def __init__(self, leaves=16, width=8, length=2, seed=1, window=8, faults=""):
        self.leaves = CIRCUIT_TREE_FAST.check("leaves", leaves, model=True)
        self.width = CIRCUIT_TREE_FAST.check("width", width, model=True)
        self.length = CIRCUIT_TREE_FAST.check("length", length, model=True)
        self.seed = CIRCUIT_TREE_FAST.check("seed", seed, model=True)
        self.window = CIRCUIT_TREE_FAST.check("window", window, model=True)
        #: Dead links and routers, stuck-at wires.
        self.faults = check_faults(faults, leaves, width, FAULT_WIRES)
        self.h = h = leaves.bit_length() - 1
        tree = FatTree(h, 2)
        self.routers = {
            (lv, t): RouterFastModel(lv, t, h, seed) for lv in range(h) for t in range(leaves // 2)
        }
        self.nis = [InterfaceFastModel(n, h, width, length, window) for n in range(leaves)]
        index: dict[Link, int] = {}

        def link(*name) -> int:
            index[Link(*name)] = len(index)
            return len(index) - 1

        # Node n on down port p of SW(0, t), (t, p) = divmod(n, 2); up port u of SW(r, t) to
        # the parent's down port that up_neighbour names (as hdl/circuit_tree.py wires it).
        for n, ni in enumerate(self.nis):
            t, p = tree.node_switch(n)
            router = self.routers[0, t]
            ni.inject = router.inputs[p] = link("inject", 0, t, p)
            ni.eject = router.outputs[p] = link("eject", 0, t, p)
        for lv in tree.link_levels():
            for t in range(leaves // 2):
                child = self.routers[lv, t]
                for u in (0, 1):
                    _, parent, down = tree.up_neighbour(lv, t, u)
                    parent_router = self.routers[lv + 1, parent]
                    child.outputs[C + u] = parent_router.inputs[down] = link("up", lv, t, u)
                    parent_router.outputs[down] = child.inputs[C + u] = link("down", lv, t, u)
        self.links = len(index)
        faulty = link_faults(self.faults, leaves, width, FAULT_WIRES)
        #: Per faulty link: its index and what its wires read.
        self._faulty = [(index[lk], fault) for lk, fault in faulty.items()]
        self._stuck_acks = {i: f.ack for i, f in self._faulty if f.ack is not None}
        self._router_list = list(self.routers.values())
        for router in self._router_list:
            router.lenient = bool(self.faults)
        self.reset()

    def reset(self) -> None:
        """Every register cleared, the LFSRs back at their seeds."""
        for router in self._router_list:
            router.reset()
        for ni in self.nis:
            ni.reset()
        self.fwd: list = [None] * self.links  # per link (head, dest, data) or None
        self._apply_faults(self.fwd)
        self.ack_wires = Acks(self.links, self._stuck_acks, strict=not self.faults)
        self.cycle = 0

    def _apply_faults(self, words: list) -> None:
        """The words the faulty links' receivers read, in place of what was sent: a link
        that reads ``valid`` 0 carries no word, one that reads it stuck at 1 a word of zeros
        when nothing was sent; ``dest`` and ``data`` as their stuck bits say."""
        for i, fault in self._faulty:
            word = words[i]
            valid = word is not None if fault.valid is None else fault.valid
            if not valid:
                words[i] = None
                continue
            head, dest, data = word if word is not None else (0, 0, 0)
            dest = (dest & fault.dest_and) | fault.dest_or
            words[i] = (head, dest, (data & fault.data_and) | fault.data_or)

    def cover_points(self) -> list[CoverPoint]:
        """The situations of the paper's rules this tree can meet, per router level and for
        the interfaces (docs/circuit_tree_fast.md, "Coverage")."""
        h, points = self.h, []
        for lv in range(h):
            top = lv == h - 1  # no parents: heads only from the children
            points.append(
                CoverPoint(
                    f"heads/L{lv}",
                    ("1", "2") if top else ("1", "2", "3", "4"),
                    "heads meeting in one router in one cycle",
                )
            )
            if not top:
                points.append(
                    CoverPoint(
                        f"up/L{lv}",
                        ("preferred", "other"),
                        "a head goes up the port its LFSR bit picks, or the "
                        "other when that one holds a circuit",
                    )
                )
            points.append(
                CoverPoint(
                    f"down/L{lv}",
                    _down_bins(lv, top),
                    "a head finds its down port free, holding a circuit, or "
                    "claimed in the same cycle (dropped: not acknowledged)",
                )
            )
            claims = () if top else ("turn over parent", "C over D", "D over C")
            claims += ("turn over turn",) if lv == 0 else ()
            if claims:
                points.append(
                    CoverPoint(
                        f"claims/L{lv}",
                        claims,
                        "two heads claim one down port in one cycle: the "
                        "turning head first, the parents in the LFSR bit's order",
                    )
                )
        return points + [
            CoverPoint("fate", ("done", "rejected"), "an attempt acknowledged or not"),
            CoverPoint(
                "attempts",
                ("first", "retried"),
                "a message done at its first attempt or sent again after a rejection",
            ),
            CoverPoint(
                "turn",
                ("self", *(f"L{lv}" for lv in range(h))),
                "messages done per level they turned at: every level's acknowledgement path",
            ),
            CoverPoint(
                "receive",
                ("empty", "leaving", "full"),
                "a head arriving at a receive store that is empty, being taken, or full (rejected)",
            ),
            CoverPoint(
                "window",
                ("full",),
                "a sender offering a message while its window of messages in flight is full",
            ),
        ]

    def start_coverage(self) -> Coverage:
        """Count hits in :meth:`cover_points` from now on; the :class:`Coverage` to read."""
        coverage = Coverage(self.cover_points())
        for part in (*self._router_list, *self.nis):
            part.cover = coverage
        self.coverage = coverage
        return coverage

    def clone(self):
        """An independent copy in the same state (its coverage too), to try traffic on; the
        LFSR state table, shared and never written, is not copied."""
        states = _shared_states()
        return copy.deepcopy(self, {id(states): states})

    @property
    def unacknowledged(self) -> list[int]:
        """Per node, its attempts that were not acknowledged (each was sent again)."""
        return [ni.unacknowledged for ni in self.nis]

    @property
    def attempts(self) -> list[int]:
        """Per node, the heads it sent."""
        return [ni.attempts for ni in self.nis]

    @property
    def delivered(self) -> int:
        """Messages taken from every receive stream so far."""
        return sum(ni.received for ni in self.nis)

    def step(self, tx_valid, tx_dest, tx_data, rx_ready=None) -> TreeOutputs:
        """One cycle: per node the transmit stream's valid, dest and data and the receive
        stream's ready (``None``: every receiver ready)."""
        cycle, fwd, acks = self.cycle, self.fwd, self.ack_wires
        leaves = self.leaves
        if rx_ready is None:
            rx_ready = [1] * leaves
        acks.resolve(cycle)
        nxt = [None] * self.links
        for router in self._router_list:
            router.step(cycle, fwd, nxt, acks)
        dmask = leaves - 1
        xmask = (1 << (self.width * self.length)) - 1
        outs = [
            ni.step(cycle, v, d & dmask, x & xmask, r, fwd, nxt, acks)
            for ni, v, d, x, r in zip(self.nis, tx_valid, tx_dest, tx_data, rx_ready, strict=True)
        ]
        if self._faulty:
            self._apply_faults(nxt)
        self.fwd = nxt
        self.cycle += 1
        return TreeOutputs(*(list(column) for column in zip(*outs, strict=True)))
