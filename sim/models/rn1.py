"""Cycle-exact reference model of one RN1 router (DeHon 1993; protocol in
:mod:`fattree.spec.rn1`, choices and timing in docs/dehon.md).

Restated from the paper and the definitions, not from the RTL. :class:`RN1Model` holds the
router's registers; :meth:`RN1Model.step` takes the words arriving in one cycle (``i_fwd[i]``
on input channel ``i``'s forward link, ``o_bk[o]`` on output channel ``o``'s backward link)
and advances one clock. The outputs visible in a cycle are the attributes :attr:`o_fwd` and
:attr:`i_bk` before that cycle's :meth:`step` (every output is a register).

The rules, per cycle:

* **Head**: an idle input whose ``ctrl`` rises asks for direction ``head & 3``. Primary mode:
  per direction, the requests are served in input order; with both outputs free the first
  request takes output ``2d + r`` (``r``: bit ``d`` of the LFSR this cycle) and the second
  ``2d + 1 - r``; with one free the first takes it; every other request is blocked.
  Alternate mode: per crossbar and direction one output; the lowest requesting input of the
  crossbar takes it if it is free. Run-time mode: the heads of a cycle are routed by the
  primary or the alternate rule as :attr:`RN1Model.alternate` (the router's one-bit input)
  says in that cycle; held circuits do not depend on it. With ``priority="round-robin"``
  each group's input order starts at its pointer, which moves to one past the last input it
  granted (in a cycle it granted any). The claimed output sends the head
  rotated (``pass_head``) in the next cycle.
* **Held circuit**: both links pass through one register each way (``o_fwd[o]`` is
  ``i_fwd[i]`` one cycle later, ``i_bk[i]`` is ``o_bk[o]`` one cycle later). A close
  (``ctrl`` falling) on either link with a code other than TURN marks the circuit *closing*.
  A BLOCKED status on either link, or any status while closing, releases the circuit after
  passing the status on: input and output are free from the next cycle.
* **Blocked** input: discards the transmission; at its close (``ctrl`` 0) it sends BLOCKED
  back for one cycle and is idle again.
"""

from __future__ import annotations

import copy
from contextlib import contextmanager

from ...params import check_int_range
from ...spec.lfsr import LFSRModel
from ...spec.rn1 import (
    BLOCKED,
    CHANNELS,
    DIRECTIONS,
    DROP,
    LFSR_STEPS,
    LFSR_WIDTH,
    MODES,
    RN1,
    RUNTIME,
    STATUS,
    TURN,
    arbitration_groups,
    circuit_pairs,
    ctrl_of,
    data_of,
    direction,
    head_for,
    outputs_for,
    pass_head,
    router_seed,
    word,
)
from ...spec.rn1_bidelta import ENDPOINT_LINKS, RN1_BIDELTA, bidelta
from ...spec.rn1_hybrid import hybrid_network
from ...spec.rn1_tree import RN1_UNIT_TREE, SUBTREES, fat_tree_network, unit_tree
from ..coverage import Coverage, CoverPoint

__all__ = [
    "IDLE",
    "OPEN",
    "DISCARD",
    "RN1Model",
    "RN1PortsModel",
    "RN1NetworkModel",
    "RN1BideltaModel",
    "RN1UnitTreeModel",
    "RN1SwallowModel",
    "RN1SparseNetworkModel",
    "RN1HybridModel",
    "RN1FatTreeModel",
    "router_cover_points",
    "senders_per_stage",
    "NetworkCoverage",
    "group_senders",
    "route_senders",
    "grouped_route_senders",
    "node_bin",
    "node_routes",
]

IDLE, OPEN, DISCARD = 0, 1, 2

#: Heads for one arbitration group in one cycle, as the cover bins name them.
_HEADS = ("1 head", "2 heads", "3+ heads")
#: Free outputs of a group, as the cover bins name them: per mode, by count.
_FREE = {"primary": ("none free", "1 free", "2 free"), "alternate": ("held", "free")}
#: The closes a held circuit passes (:func:`router_cover_points` with ``detail``).
_CLOSES = ("TURN forward", "TURN backward", "close forward", "close backward")
#: What a held circuit carries (:func:`router_cover_points` with ``detail``).
_WORDS = ("head alone", "head and bytes", "code as a byte", "data on an idle word")


def router_cover_points(
    tag: str,
    mode: str,
    senders: int = CHANNELS,
    *,
    detail: bool = False,
    priority: str = "fixed",
    ranks: str = "input",
    places=None,
    choices=None,
    alone: bool = True,
) -> list[CoverPoint]:
    """The situations of DeHon's routing rule a router counts (:attr:`RN1Model.cover`) for
    a network whose heads only open circuits, close with DROP and are answered from
    downstream (as the endpoints of ``rn1-bidelta-stream`` do): arbitration per group,
    the random choice between two free outputs (primary mode only: the alternate mode has
    one output per group), the discarded transmissions, and the circuits released by the
    status passing back. ``tag`` names the routers counted together (a stage); ``senders``,
    how many senders can reach one group of them, each with one transmission at a time: a
    bin needing more (heads plus held outputs) cannot happen and is not declared.

    With ``detail`` (routers whose connections may turn, as the endpoints of
    :mod:`fattree.sim.checks.rn1` drive them; :attr:`RN1Model.cover_detail`), also: the
    choice by the output taken, the ranking (which input won a contested group, by
    ``priority``), statuses on either link, the closes in either direction, and what a held
    circuit carries; ``ranks``: the ranking's bins by ``"input"`` (the router alone) or by
    ``"place"`` in the group's order (a network's routers, where only some inputs of a
    group are fed by heads that can meet; ``places``: those that can win a contest, default
    all but the last; ``choices``: the outputs the choice can give, default all; ``alone``:
    whether a transmission's last head byte is routed here, so that its first segment can
    be its head alone). ``mode``
    ``"runtime"``: the group points of both modes (named ``point/tag@mode``) and the flips
    of the ``alternate`` input."""
    args = {"detail": detail, "priority": priority, "ranks": ranks, "places": places}
    args["choices"], args["alone"] = choices, alone
    if mode == RUNTIME:
        return _runtime_cover_points(tag, senders, args)
    points = _group_cover_points(tag, mode, senders, args)
    release = ("CONNECTED back", "BLOCKED back")
    if detail:
        release += (
            "CONNECTED forward",
            "BLOCKED forward",
            "BLOCKED back, not closing",
            "BLOCKED forward, not closing",
        )
    points += [
        CoverPoint(
            f"discard/{tag}",
            ("answered BLOCKED",),
            "a blocked transmission discarded entire and answered BLOCKED at its close",
        ),
        CoverPoint(
            f"release/{tag}",
            release,
            "a circuit released by the status passing back after its close: the "
            "destination's acknowledgement, or BLOCKED from a later stage or a full receiver"
            + (
                "; after a turn, the status the first sender returns on the forward link; a "
                "TURN refused with BLOCKED (not closing), which ends the connection"
                if detail
                else ""
            ),
        ),
    ]
    if detail:
        points += [
            CoverPoint(
                f"close/{tag}",
                _CLOSES,
                "a connection reversed (TURN) on the link that carried the data, either "
                "way, and ended (any other close) either way: reversal is RN1's fast reply",
            ),
            CoverPoint(
                f"frame/{tag}",
                _WORDS if alone else _WORDS[1:],
                "the framing a held circuit must pass untouched: a transmission of its head "
                "alone, a byte whose value is a code (ctrl high: data), and an idle word "
                "carrying data (neither a close nor a status)",
            ),
        ]
    return points


def _runtime_cover_points(tag: str, senders: int, args: dict) -> list[CoverPoint]:
    """The run-time router's points: each mode's group points under its own name, the rest
    once, and (with ``detail``) the flips of the mode input."""
    shared = router_cover_points(tag, "primary", senders, **args)
    groups = [
        CoverPoint(f"{p.name}@{m}", p.bins, p.why)
        for m in MODES
        for p in router_cover_points(tag, m, senders, **args)
        if p.name.split("/")[0] in _GROUP_POINTS
    ]
    flips = CoverPoint(
        f"alternate/{tag}",
        ("flipped, circuits held", "flipped, none held"),
        "the mode input changed under held circuits (they must not notice) or on an idle router",
    )
    rest = [p for p in shared if p.name.split("/")[0] not in _GROUP_POINTS]
    return groups + rest + ([flips] if args["detail"] else [])


def _group_cover_points(tag: str, mode: str, senders: int, args: dict) -> list[CoverPoint]:
    """The points of one mode's output groups: arbitration, the choice between two free
    outputs (primary mode) and, with ``detail``, the ranking."""
    detail, choices, places = args["detail"], args["choices"], args["places"]
    outputs = 2 if mode == "primary" else 1
    bins = tuple(
        f"{h}, {f}"
        for n, h in enumerate(_HEADS, 1)
        for free, f in reversed(list(enumerate(_FREE[mode])))
        if n + outputs - free <= senders
    )
    points = [
        CoverPoint(
            f"arbitrate/{tag}",
            bins,
            "heads wanting one direction in one cycle against its free outputs: the "
            "lowest inputs win the free ones, the rest (and all, when none is free) are "
            "blocked",
        )
    ]
    if mode == "primary":
        points.append(
            CoverPoint(
                f"choice/{tag}",
                tuple(f"output {o}" for o in (choices or range(CHANNELS)))
                if detail
                else ("2d", "2d+1"),
                "both outputs of a direction free: the LFSR picks which one the first head takes"
                + (" (each direction's bit both ways)" if detail else ""),
            )
        )
    if detail:
        points.append(
            CoverPoint(
                f"rank/{tag}",
                tuple(f"input {i}" for i in _rankable(mode, args["priority"]))
                if args["ranks"] == "input"
                else tuple(
                    f"place {k}" for k in places or range(1, len(arbitration_groups(mode)[0][1]))
                ),
                f"{'an input' if args['ranks'] == 'input' else 'a place in its group'} that took "
                "an output a head ranked after it also wanted: every place of the "
                f"{args['priority']} ranking decides a contest",
            )
        )
    return points


#: BLOCKED answers in a row before a transmission got through, as the cover bins name them.
_RETRIES = ((0, "first try"), (1, "1 retry"), (2, "2-3 retries"), (4, "4+ retries"))

#: The points counted per arbitration group (named by the routing mode of a run-time router).
_GROUP_POINTS = ("arbitrate", "choice", "rank")


def _rankable(mode: str, priority: str) -> list[int]:
    """Inputs that can be ranked before another request of their group: with the fixed
    priority every input but the last of its group, with round-robin every input."""
    last = 0 if priority == "round-robin" else 1
    return sorted(
        {i for _, inputs, _ in arbitration_groups(mode) for i in inputs[: len(inputs) - last]}
    )


def senders_per_stage(net, channels: bool = False) -> list[int]:
    """Per stage of the bidelta ``net``, the most endpoints whose transmissions can reach
    one arbitration group of one router (4 in the one router of 4 endpoints, which takes
    both outputs of every endpoint); ``channels``: the most endpoint links (each link a
    sender of its own, as at the bare network's channels)."""
    reach: dict[tuple, set] = {}  # router input end -> endpoints (or links) reaching it

    def reaching(j: int, r: int, inputs) -> set:
        return set().union(*(reach.get(("in", j, r, i), set()) for i in inputs))

    for j in range(net.stages):
        for src, dst in net.links:
            if dst[0] == "in" and dst[1] == j:
                if src[0] == "ep_out":
                    reach[dst] = {src[1:] if channels else src[1]}
                else:
                    reach[dst] = reaching(*src[1:3], range(CHANNELS))
    return [
        max(
            len(reaching(j, r, inputs))
            for r in range(net.routers_per_stage)
            for _, inputs, _ in arbitration_groups(net.mode(j))
        )
        for j in range(net.stages)
    ]


class RN1Model:
    """Registers of one :class:`~fattree.hdl.rn1.router.RN1Router`.

    Parameters
    ----------
    mode : str
        ``"primary"``, ``"alternate"`` (:data:`fattree.spec.rn1.MODES`) or ``"runtime"``.
    seed : int
        Seed of the router's LFSR, ``1 .. 65535``.
    priority : str
        ``"fixed"`` (input order) or ``"round-robin"`` (:data:`fattree.spec.rn1.PRIORITIES`).

    Attributes
    ----------
    alternate : int
        Run-time mode only: the router's ``alternate`` input (0 or 1), set before each
        :meth:`step` like the other inputs; a reset does not change it (it is an input, not
        a register).
    """

    def __init__(self, mode: str = "primary", seed: int = 1, priority: str = "fixed"):
        self.mode = RN1.check("mode", mode, model=True)
        self.seed = RN1.check("seed", seed, model=True)
        self.priority = RN1.check("priority", priority, model=True)
        self._alternate = 0
        self.reset()

    #: The run's :class:`~fattree.sim.coverage.Coverage` (None: not counted) and the tag
    #: its points are named by (:func:`router_cover_points`; both set by the network).
    cover: Coverage | None = None
    cover_tag = ""
    #: Count the points of :func:`router_cover_points` with ``detail`` (turns, ranks, ...).
    cover_detail = False
    #: How the ranking's bins name a winner: ``"input"`` or ``"place"`` (in its group's order).
    cover_ranks = "input"
    #: What :meth:`start_coverage` counts into (the router alone; None: not counted).
    coverage: Coverage | None = None

    def cover_points(self) -> list[CoverPoint]:
        """The router alone: :func:`router_cover_points` with ``detail``, tag ``router``,
        every input a sender (docs/dehon.md, "Coverage")."""
        return router_cover_points("router", self.mode, detail=True, priority=self.priority)

    def start_coverage(self) -> Coverage:
        """Count hits in :meth:`cover_points` from now on; the :class:`Coverage` to read."""
        self.coverage = self.cover = Coverage(self.cover_points())
        self.cover_tag, self.cover_detail = "router", True
        return self.coverage

    def clone(self) -> RN1Model:
        """An independent copy in the same state (its coverage too), to try traffic on."""
        return copy.deepcopy(self)

    @property
    def alternate(self) -> int:
        return self._alternate

    @alternate.setter
    def alternate(self, value: int) -> None:
        if self.mode != RUNTIME:
            raise ValueError(f"only a runtime router has an alternate input, not a {self.mode} one")
        self._alternate = check_int_range("alternate", value, 0, 1)

    @property
    def routing(self) -> str:
        """The fixed mode this cycle's heads are routed by."""
        if self.mode != RUNTIME:
            return self.mode
        return "alternate" if self._alternate else "primary"

    def reset(self) -> None:
        self.lfsr = LFSRModel(LFSR_WIDTH, seed=self.seed, steps=LFSR_STEPS)
        #: Per arbitration group (``arbitration_groups``), the position its ranking starts
        #: at: always 0 with the fixed priority.
        self.pointer = {key: 0 for mode in MODES for key, _, _ in arbitration_groups(mode)}
        self.state = [IDLE] * CHANNELS
        self.route = [0] * CHANNELS
        self.closing = [0] * CHANNELS
        self.prev_ctrl = [0] * CHANNELS  # ctrl of each input's forward word, one cycle ago
        self.busy = [0] * CHANNELS
        self.owner = [0] * CHANNELS
        self.o_fwd = [0] * CHANNELS
        self.i_bk = [0] * CHANNELS
        #: What the last step decided, per input: ("open", output), "blocked",
        #: "release" or None; for tests and statistics.
        self.decisions: list = [None] * CHANNELS
        # Counting only: bytes of each circuit's first segment, whether it is still the
        # first, and the ``alternate`` input in the cycle before.
        self._cover_bytes = [0] * CHANNELS
        self._cover_first = [False] * CHANNELS
        self._cover_alternate = self._alternate

    def _arbitrate(self, header: list[bool], heads: list[int]) -> dict[int, int]:
        """Input -> granted output for this cycle's heads (inputs missing were blocked)."""
        grants = {}
        rand = self.lfsr.state
        for key, inputs, outs in arbitration_groups(self.routing):
            d = key[-1]
            start = self.pointer[key]
            order = inputs[start:] + inputs[:start]
            reqs = [i for i in order if header[i] and direction(heads[i]) == d]
            free = [o for o in outs if not self.busy[o]]
            if reqs and self.cover is not None:
                self._cover_group(len(reqs), len(free), outs[(rand >> d) & (len(outs) - 1)])
            if len(free) == 2:
                r = (rand >> d) & 1
                free = [outs[r], outs[1 - r]]
            won = list(zip(reqs, free, strict=False))
            grants.update(won)
            if self.cover_detail and self.cover is not None and len(won) < len(reqs):
                for i, _ in won:
                    by = (
                        f"input {i}"
                        if self.cover_ranks == "input"
                        else f"place {order.index(i) + 1}"
                    )
                    self.cover.hit(self._group_point("rank"), by)
            if won and self.priority == "round-robin":
                self.pointer[key] = (inputs.index(won[-1][0]) + 1) % len(inputs)
        return grants

    def _group_point(self, point: str) -> str:
        """The name of a group point: a run-time router's carry the mode it routes by."""
        name = f"{point}/{self.cover_tag}"
        return f"{name}@{self.routing}" if self.mode == RUNTIME else name

    def _cover_group(self, heads: int, free: int, first: int) -> None:
        """Count one group's arbitration: ``heads`` requests, ``free`` outputs, the output
        the LFSR gives the first head when both are free."""
        mode = self.routing
        self.cover.hit(
            self._group_point("arbitrate"), f"{_HEADS[min(heads, 3) - 1]}, {_FREE[mode][free]}"
        )
        if free == 2:
            chosen = f"output {first}" if self.cover_detail else ("2d+1" if first & 1 else "2d")
            self.cover.hit(self._group_point("choice"), chosen)

    def _cover_held(self, i: int, f: int, b: int, f_close: bool, b_close: bool) -> None:
        """Count what held circuit ``i`` carries this cycle (``detail`` only): its closes,
        the length of its first segment, code-valued bytes and idle words with data."""
        cover, tag = self.cover, self.cover_tag
        for w, close, way in ((f, f_close, "forward"), (b, b_close, "backward")):
            if close:
                cover.hit(f"close/{tag}", f"{'TURN' if data_of(w) == TURN else 'close'} {way}")
            elif ctrl_of(w) and data_of(w) in (DROP, TURN, *STATUS):
                cover.hit(f"frame/{tag}", "code as a byte")
            elif not ctrl_of(w) and data_of(w) and data_of(w) not in STATUS:
                cover.hit(f"frame/{tag}", "data on an idle word")
        if ctrl_of(f):
            self._cover_bytes[i] += 1
        elif f_close and self._cover_first[i]:
            self._cover_first[i] = False
            cover.hit(f"frame/{tag}", "head and bytes" if self._cover_bytes[i] else "head alone")

    def _cover_release(self, f: int, b: int, closing: int) -> None:
        """Count a released circuit by the status that released it; a status on the
        forward link (after a turn) or a BLOCKED before the close is named apart, and is no
        bin of a network that neither turns nor sees it (the count then fails loudly)."""
        back = not ctrl_of(b) and data_of(b) in STATUS
        code = "BLOCKED" if data_of(b if back else f) == BLOCKED else "CONNECTED"
        where = "back" if back else "forward"
        self.cover.hit(
            f"release/{self.cover_tag}", f"{code} {where}" + ("" if closing else ", not closing")
        )

    def step(self, i_fwd, o_bk) -> None:
        """One clock with ``i_fwd`` (per input, forward word) and ``o_bk`` (per output,
        backward word) arriving."""
        state = self.state
        ctrl = [ctrl_of(w) for w in i_fwd]
        heads = [data_of(w) for w in i_fwd]
        header = [
            state[i] == IDLE and ctrl[i] == 1 and not self.prev_ctrl[i] for i in range(CHANNELS)
        ]
        grants = self._arbitrate(header, heads)
        if self.cover_detail and self.cover is not None and self.mode == RUNTIME:
            if self._alternate != self._cover_alternate:
                held = "circuits held" if any(self.busy) else "none held"
                self.cover.hit(f"alternate/{self.cover_tag}", f"flipped, {held}")
            self._cover_alternate = self._alternate

        n_state, n_route, n_closing = list(state), list(self.route), list(self.closing)
        n_busy, n_owner = list(self.busy), list(self.owner)
        n_o_fwd = [0] * CHANNELS
        n_i_bk = [0] * CHANNELS
        decisions: list = [None] * CHANNELS
        for o in range(CHANNELS):
            if self.busy[o]:
                n_o_fwd[o] = i_fwd[self.owner[o]]
        for i in range(CHANNELS):
            if header[i]:
                if i in grants:
                    o = grants[i]
                    n_state[i], n_route[i], n_closing[i] = OPEN, o, 0
                    n_busy[o], n_owner[o] = 1, i
                    n_o_fwd[o] = word(1, pass_head(heads[i]))
                    decisions[i] = ("open", o)
                    self._cover_bytes[i], self._cover_first[i] = 0, True
                else:
                    n_state[i] = DISCARD
                    decisions[i] = "blocked"
            elif state[i] == DISCARD:
                if not ctrl[i]:
                    n_state[i] = IDLE
                    n_i_bk[i] = word(0, BLOCKED)
                    if self.cover is not None:
                        self.cover.hit(f"discard/{self.cover_tag}", "answered BLOCKED")
            elif state[i] == OPEN:
                o = self.route[i]
                f, b = i_fwd[i], o_bk[o]
                n_i_bk[i] = b
                f_close = not ctrl_of(f) and self.prev_ctrl[i]
                b_close = not ctrl_of(b) and ctrl_of(self.i_bk[i])
                f_status = not ctrl_of(f) and data_of(f) in STATUS
                b_status = not ctrl_of(b) and data_of(b) in STATUS
                blocked = (f_status and data_of(f) == BLOCKED) or (
                    b_status and data_of(b) == BLOCKED
                )
                if self.cover_detail and self.cover is not None:
                    self._cover_held(i, f, b, f_close, b_close)
                if blocked or (self.closing[i] and (f_status or b_status)):
                    n_state[i], n_closing[i] = IDLE, 0
                    n_busy[o] = 0
                    decisions[i] = "release"
                    if self.cover is not None:
                        self._cover_release(f, b, self.closing[i])
                elif (f_close and data_of(f) != TURN) or (b_close and data_of(b) != TURN):
                    n_closing[i] = 1
        self.state, self.route, self.closing = n_state, n_route, n_closing
        self.busy, self.owner = n_busy, n_owner
        self.prev_ctrl = ctrl
        self.o_fwd, self.i_bk = n_o_fwd, n_i_bk
        self.decisions = decisions
        self.lfsr.clock()


class RN1PortsModel(RN1Model):
    """:class:`RN1Model` with some ports disabled, as RN1's configuration can disable them
    once a fault is found ([DKM90]; docs/dehon.md, "Faults"): a disabled output is never
    granted (the random choice takes the other output of its direction; a head with no
    enabled output of its direction is blocked and answered BLOCKED, as when both are busy),
    and a disabled input or output reads its link as idle. A dead router is one with every
    port disabled: it neither takes nor sends anything. With no port disabled it is
    :class:`RN1Model`."""

    def __init__(
        self, mode: str = "primary", seed: int = 1, disabled_inputs=(), disabled_outputs=()
    ):
        super().__init__(mode, seed)
        self.disabled_inputs = _check_ports("disabled_inputs", disabled_inputs)
        self.disabled_outputs = _check_ports("disabled_outputs", disabled_outputs)

    def _arbitrate(self, header: list[bool], heads: list[int]) -> dict[int, int]:
        if not self.disabled_outputs:
            return super()._arbitrate(header, heads)
        busy = self.busy  # a disabled output is arbitrated as a busy one
        self.busy = [b or o in self.disabled_outputs for o, b in enumerate(busy)]
        try:
            return super()._arbitrate(header, heads)
        finally:
            self.busy = busy

    def step(self, i_fwd, o_bk) -> None:
        off_in, off_out = self.disabled_inputs, self.disabled_outputs
        if off_in:
            i_fwd = [0 if i in off_in else w for i, w in enumerate(i_fwd)]
        if off_out:
            o_bk = [0 if o in off_out else w for o, w in enumerate(o_bk)]
        super().step(i_fwd, o_bk)


def _check_ports(name: str, ports) -> frozenset[int]:
    if isinstance(ports, str | bytes) or not hasattr(ports, "__iter__"):
        raise TypeError(f"{name} must be a collection of port numbers, not {ports!r}")
    return frozenset(check_int_range(name, p, 0, CHANNELS - 1) for p in ports)


def _check_keys(name: str, items, known) -> set[tuple]:
    """``items`` as a set of tuples, each one of ``known`` (router keys or link ends)."""
    if isinstance(items, str | bytes) or not hasattr(items, "__iter__"):
        raise TypeError(f"{name} must be a collection of router keys or link ends, not {items!r}")
    out = set()
    for item in items:
        key = tuple(item) if isinstance(item, list | tuple) else item
        try:
            ok = key in known
        except TypeError:
            ok = False
        if not ok:
            raise ValueError(f"{name}: {item!r} is not one of this network's")
        out.add(key)
    return out


def _disabled_ports(routers: dict, links, swallows, dead, dead_links):
    """Which ports the network's configuration disables for ``dead`` routers and
    ``dead_links`` (named by their source end: a router output or an edge input channel):
    ``({router: inputs}, {router: outputs}, {dead edge sources})``. A link through a swallow
    element is one channel: it is disabled at the router output before the swallow (and
    the router input after it) when the router at either end is dead or the link is."""
    sink_of = dict(links)
    swallow_ends = {("in", *key, 0) for key in swallows}
    off_in: dict[tuple, set] = {}
    off_out: dict[tuple, set] = {}
    dead_edges = set()

    def router_of(end):
        if end[0] in ("in", "out") and end[1:-1] in routers:
            return end[1:-1]
        return None

    for src, dst in links:
        if src[0] == "out" and src[1] == "sw":
            continue  # the second half of a channel through a swallow: taken with the first
        last = dst
        while last in swallow_ends:
            last = sink_of[("out", *last[1:-1], 0)]
        a, b = router_of(src), router_of(last)
        if src in dead_links or a in dead or b in dead:
            if a is not None:
                off_out.setdefault(a, set()).add(src[-1])
            elif src[0] not in ("in", "out"):
                dead_edges.add(src)
            if b is not None:
                off_in.setdefault(b, set()).add(last[-1])
    for key in dead:
        off_in[key] = off_out[key] = set(range(CHANNELS))
    return off_in, off_out, dead_edges


class RN1SwallowModel:
    """Registers of a swallow element (:class:`~fattree.hdl.rn1.swallow.RN1Swallow`): one
    channel in, one out, in front of every link that enters a unit tree from another unit
    tree of a fat-tree (docs/dehon.md, "Routes over several head bytes").

    A connection's head byte (``ctrl`` rising on an idle element) is the byte the unit tree
    behind has used up: it is dropped, and the next byte, one cycle later, leaves as the head
    of the next unit tree. From then on both links pass through one register each way, as
    through a router's held circuit, and the circuit is released by the router's rules (a
    BLOCKED on either link, or any status after a close other than TURN). A transmission
    that closes right after the dropped byte (nothing left to route) is answered BLOCKED the
    cycle after its close, as a router answers a discarded one.
    """

    #: After the dropped head byte, before the next word.
    DROPPED = 3

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.state = IDLE
        self.closing = 0
        self.prev_ctrl = 0
        self.o_fwd = [0]
        self.i_bk = [0]
        self.decisions: list = [None]

    def step(self, i_fwd, o_bk) -> None:
        f, b = i_fwd[0], o_bk[0]
        ctrl = ctrl_of(f)
        n_fwd = n_bk = 0
        decision = None
        if self.state == IDLE:
            if ctrl and not self.prev_ctrl:
                self.state, self.closing, decision = self.DROPPED, 0, "swallow"
        elif self.state == self.DROPPED:
            if ctrl:
                self.state, n_fwd = OPEN, f
            else:
                self.state, n_bk, decision = IDLE, word(0, BLOCKED), "blocked"
        else:
            n_fwd, n_bk = f, b
            f_close = not ctrl and self.prev_ctrl
            b_close = not ctrl_of(b) and ctrl_of(self.i_bk[0])
            f_status = not ctrl and data_of(f) in STATUS
            b_status = not ctrl_of(b) and data_of(b) in STATUS
            blocked = (f_status and data_of(f) == BLOCKED) or (b_status and data_of(b) == BLOCKED)
            if blocked or (self.closing and (f_status or b_status)):
                self.state, self.closing, decision = IDLE, 0, "release"
            elif (f_close and data_of(f) != TURN) or (b_close and data_of(b) != TURN):
                self.closing = 1
        self.prev_ctrl = ctrl
        self.o_fwd, self.i_bk = [n_fwd], [n_bk]
        self.decisions = [decision]

    @property
    def quiet(self) -> bool:
        return self.state == IDLE and not (self.prev_ctrl or self.o_fwd[0] or self.i_bk[0])


class RN1NetworkModel:
    """A network of :class:`RN1Model` routers wired by a link list (the one the hardware is
    built from). Link ends are tuples: ``("in", *key, port)`` and ``("out", *key, port)`` for
    router ``key``; any other end is outside the network: ``inputs`` lists the sources that
    are the network's input channels (in channel order), ``outputs`` the sinks that are its
    output channels. Every router output is a register, so a step gathers every router's
    inputs from the current outputs first, then steps them all.

    :attr:`o_fwd` and :attr:`i_bk` (outputs) and the arguments of :meth:`step` (inputs) are
    lists of words, one per channel.

    ``dead`` (router keys) and ``dead_links`` (links named by their source end: a router
    output, or an edge input channel; a link through a swallow element is named by the
    router output before it) are faults the network is configured around: the routers at
    their ends are :class:`RN1PortsModel` with the ports facing them disabled
    (docs/dehon.md, "Faults"). With none, every router is an :class:`RN1Model`.
    """

    def __init__(self, routers: dict, links, inputs, outputs, swallows=(), dead=(), dead_links=()):
        dead = _check_keys("dead", dead, routers)
        link_sources = {src for src, _ in links if not (src[0] == "out" and src[1] == "sw")}
        dead_links = _check_keys("dead_links", dead_links, link_sources)
        off_in, off_out, dead_edges = _disabled_ports(routers, links, swallows, dead, dead_links)
        self.routers = {
            key: RN1PortsModel(mode, seed, off_in.get(key, ()), off_out.get(key, ()))
            if key in off_in or key in off_out
            else RN1Model(mode, seed)
            for key, (mode, seed) in routers.items()
        }
        self.swallows = {key: RN1SwallowModel() for key in swallows}
        self.elements = {**self.routers, **self.swallows}
        self.channels = len(inputs)
        if len(outputs) != self.channels:
            raise ValueError(f"{len(inputs)} input channels but {len(outputs)} output channels")
        #: Input channels whose link is disabled (dead, or into a dead router): a sender
        #: must not use them (what it sends there is ignored and never answered).
        self.dead_channels = sorted(c for c, end in enumerate(inputs) if end in dead_edges)
        in_index = {end: c for c, end in enumerate(inputs)}
        out_index = {end: c for c, end in enumerate(outputs)}

        def place(end, index):
            if end[0] in ("in", "out"):
                return ("router", self.elements[end[1:-1]], end[-1])
            return ("edge", index[end], None)

        # (source, sink) as ("router", model, port) or ("edge", channel, None); a swallow
        # counts as a router of one port here.
        self._links = [(place(src, in_index), place(dst, out_index)) for src, dst in links]

    def reset(self) -> None:
        for element in self.elements.values():
            element.reset()

    #: The counting of :class:`NetworkCoverage` (None: not counted).
    coverage: Coverage | None = None

    @property
    def decisions(self) -> list:
        return [d for r in self.routers.values() for d in r.decisions]

    @property
    def o_fwd(self) -> list[int]:
        words = [0] * self.channels
        for (_, router, port), (dkind, channel, _) in self._links:
            if dkind == "edge":
                words[channel] = router.o_fwd[port]
        return words

    @property
    def i_bk(self) -> list[int]:
        words = [0] * self.channels
        for (kind, channel, _), (_, router, port) in self._links:
            if kind == "edge":
                words[channel] = router.i_bk[port]
        return words

    def step(self, i_fwd, o_bk) -> None:
        fwd_in = {id(r): [0] * len(r.o_fwd) for r in self.elements.values()}
        bk_in = {id(r): [0] * len(r.o_fwd) for r in self.elements.values()}
        for (kind, a, pa), (dkind, b, pb) in self._links:
            fwd = i_fwd[a] if kind == "edge" else a.o_fwd[pa]
            bk = o_bk[b] if dkind == "edge" else b.i_bk[pb]
            if dkind == "router":
                fwd_in[id(b)][pb] = fwd
            if kind == "router":
                bk_in[id(a)][pa] = bk
        for element in self.elements.values():
            element.step(fwd_in[id(element)], bk_in[id(element)])
        if self.coverage is not None:
            self._cover_network(self.routers.values())


def group_senders(network, tag_of, sender_of=None) -> dict[str, tuple[str, int]]:
    """Per tag (``tag_of(router key)``) of the routers of ``network`` (an
    :class:`RN1NetworkModel`): their mode and the most senders whose transmissions can
    reach one arbitration group of one of them, through the links and the (input, output)
    pairs a circuit can join; a sender is an input channel, or ``sender_of(channel)`` (the
    endpoint that owns it); counted up to :data:`CHANNELS`, more than any bin needs."""
    src_of = {(id(b), pb): (kind, a, pa) for (kind, a, pa), (_, b, pb) in network._links}
    sender_of = sender_of or (lambda c: c)
    memo: dict[tuple, set] = {}

    def reach(element, port: int) -> set:
        key = (id(element), port)
        if key not in memo:
            memo[key] = found = set()
            kind, a, pa = src_of.get(key, ("none", None, None))
            if kind == "edge":
                found.add(sender_of(a))
            elif kind == "router":
                pairs = circuit_pairs(a.mode) if isinstance(a, RN1Model) else {(0, 0)}
                for i, o in pairs:
                    if o == pa and len(found) < CHANNELS:
                        found |= reach(a, i)
        return memo[key]

    tags: dict[str, tuple[str, int]] = {}
    for key, r in network.routers.items():
        tag = tag_of(key)
        most = max(
            len(set().union(*(reach(r, i) for i in inputs)))
            for _, inputs, _ in arbitration_groups(r.mode)
        )
        tags[tag] = (r.mode, min(CHANNELS, max(most, tags.get(tag, ("", 0))[1])))
    return tags


def route_senders(network, tag_of, paths) -> dict[str, tuple[str, int]]:
    """Per tag (``tag_of(router key)``) of the routers of ``network`` (an
    :class:`RN1NetworkModel`): their mode and the most transmissions that can be at one
    arbitration group at once, asking for its direction: every ``(sender, channel, head
    bytes)`` of ``paths`` followed through every output its heads may take (a swallow drops
    one byte), and per group the fewer of its senders and its inputs they come by (each
    sender and each input carries one transmission at a time); the places in a group's
    order that such transmissions come by, but the last (those that can win a contest); and
    the outputs of the directions they ask for (those a choice can give).
    Exact where :func:`group_senders` is a bound: a group can be reachable from inputs that
    never ask for its direction together.

    A head byte's ways through the routers, up to the swallows that drop it, depend on that
    byte and where it entered alone, not on the sender or the bytes behind it: each router
    input a byte comes by is followed once (:class:`_Segments`), the senders are carried
    from stack to stack as sets, at most :data:`CHANNELS` each (no group has more inputs,
    so more senders change no count), and the senders sending the same bytes from the same
    places go together (:func:`grouped_route_senders`). Also per tag: whether a
    transmission's last head byte is routed there (its first segment can be its head alone).
    """
    by_heads: dict[tuple, list] = {}
    for sender, channel, heads in paths:
        by_heads.setdefault(tuple(heads), []).append((sender, channel))
    return grouped_route_senders(
        network, tag_of, ((sources, heads) for heads, sources in by_heads.items())
    )


def grouped_route_senders(network, tag_of, routes) -> dict[str, tuple]:
    """:func:`route_senders` of ``routes``: ``(sources, head bytes)``, every ``(sender,
    channel)`` of ``sources`` sending those bytes (fewer items than one per path: a
    network's nodes share most of their routes)."""
    segments = _Segments(network)
    arrived, last = _arrivals(segments, routes)
    groups: dict[tuple, tuple[set, set]] = {}  # (router key, group key) -> senders, places
    asked: dict[tuple, set] = {}  # router key -> directions asked
    ends: set[tuple] = set()  # router keys that route a transmission's last head byte
    for state in segments.in_order(arrived):  # each state's senders before it passes them
        senders = arrived.pop(state, set())
        key, gkey, place, ways = segments.step(state)
        if key is None:
            continue
        group_senders, places = groups.setdefault((key, gkey), (set(), set()))
        _add_capped(group_senders, senders)
        places.add(place)
        asked.setdefault(key, set()).add(gkey[-1])
        for nxt in ways:
            _add_capped(arrived.setdefault(nxt, set()), senders)
        if state in last:
            ends.add(key)
            last.update(ways)
    tags: dict[str, tuple] = {}
    for (key, _), (senders, inputs) in groups.items():
        tag = tag_of(key)
        _, most, places, outs, alone = tags.get(tag, ("", 0, set(), set(), False))
        if len(inputs) > 1:  # every fed place but the last can win over a later one
            places |= set(sorted(inputs)[:-1])
        outs |= {o for d in asked[key] for o in (2 * d, 2 * d + 1)}
        most = max(most, min(len(senders), len(inputs)))
        tags[tag] = (network.routers[key].mode, most, places, outs, alone or key in ends)
    return {
        tag: (mode, most, tuple(sorted(p)), tuple(sorted(o)), alone)
        for tag, (mode, most, p, o, alone) in tags.items()
    }


def _arrivals(segments: _Segments, routes) -> tuple[dict[tuple, set], set[tuple]]:
    """Where the head bytes of ``routes`` (as :func:`grouped_route_senders` takes them)
    enter a stack of routers: ``(element, port, head byte)`` -> the senders whose byte
    enters there, and those where a transmission's last head byte enters. The routes of the
    same senders go as a trie of their bytes, so a byte shared by many routes (a cluster's
    way up) is carried on once."""
    by_heads: dict[tuple, set] = {}
    for sources, heads in routes:
        by_heads.setdefault(tuple(heads), set()).update(sources)
    tries: dict[tuple, dict] = {}  # sources -> the head bytes they send, as a trie
    for heads, sources in by_heads.items():
        node = tries.setdefault(tuple(sorted(sources)), {})
        for h in heads:
            node = node.setdefault(h, {})
    arrived: dict[tuple, set] = {}
    last: set[tuple] = set()
    for sources, trie in tries.items():
        frontier: dict[tuple, set] = {}  # (element, port) -> senders whose next byte is there
        for sender, channel in sources:
            entry = segments.start.get(channel)
            if entry is not None:
                _add_capped(frontier.setdefault(entry, set()), (sender,))
        stack = [(frontier, trie)]
        while stack:
            frontier, trie = stack.pop()
            for head, rest in trie.items():
                ahead: dict[tuple, set] = {}
                for entry, senders in frontier.items():
                    state = (*entry, head)
                    _add_capped(arrived.setdefault(state, set()), senders)
                    if not rest:
                        last.add(state)
                    for nxt in segments.exits(state) if rest else ():
                        _add_capped(ahead.setdefault(nxt, set()), senders)
                if rest:
                    stack.append((ahead, rest))
    return arrived, last


def _add_capped(senders: set, more) -> None:
    """``senders |= more``, up to :data:`CHANNELS` senders (more change no group's count)."""
    if len(senders) < CHANNELS:
        senders.update(more)


class _Segments:
    """The ways of one head byte through the routers of ``network`` (an
    :class:`RN1NetworkModel`) from where it enters (``(element index, port)``) to the
    swallows that drop it, through every output it may take; each followed once."""

    def __init__(self, network):
        elements = list(network.elements.values())
        index = {id(e): n for n, e in enumerate(elements)}
        key_of = {id(r): key for key, r in network.routers.items()}
        self._key = [key_of.get(id(e)) for e in elements]
        nxt = [{} for _ in elements]
        #: channel -> the element input it feeds
        self.start = {}
        for (kind, a, pa), (_, b, pb) in network._links:
            if id(b) not in index:
                continue
            if kind == "edge":
                self.start[a] = (index[id(b)], pb)
            elif id(a) in index:
                nxt[index[id(a)]][pa] = (index[id(b)], pb)
        # Per router: per input and direction, the elements its outputs feed, and its
        # (group key, place) per input and direction; per swallow: what it feeds.
        self._ways, self._group = [], []
        for n, e in enumerate(elements):
            if self._key[n] is None:
                self._ways.append(nxt[n].get(0))
                self._group.append(None)
                continue
            place, group = {}, {}
            for gkey, inputs, _ in arbitration_groups(e.mode):
                for k, i in enumerate(inputs, 1):
                    place[i] = k
                    group[i, gkey[-1]] = gkey
            self._ways.append(
                [
                    [
                        tuple(nxt[n][o] for o in outputs_for(e.mode, i, d) if o in nxt[n])
                        for d in range(DIRECTIONS)
                    ]
                    for i in range(CHANNELS)
                ]
            )
            self._group.append(
                {
                    (i, d): (group[i, d], place[i])
                    for i in range(CHANNELS)
                    for d in range(DIRECTIONS)
                }
            )
        self._steps: dict[tuple, tuple] = {}
        self._exits: dict[tuple, tuple] = {}

    def step(self, state: tuple[int, int, int]) -> tuple:
        """Head byte ``h`` at input ``port`` of element ``n`` (``state``): the router's key,
        the group it asks and its place there, and the states it may go on to (at a
        swallow: None, None, None and no state, the byte ends there)."""
        found = self._steps.get(state)
        if found is None:
            n, port, h = state
            if self._key[n] is None:
                found = (None, None, None, ())
            else:
                d = direction(h)
                gkey, place = self._group[n][port, d]
                passed = pass_head(h)
                ways = tuple((*w, passed) for w in self._ways[n][port][d])
                found = (self._key[n], gkey, place, ways)
            self._steps[state] = found
        return found

    def exits(self, state: tuple[int, int, int]) -> tuple:
        """Where the next head byte enters (``(element, port)``) after the byte of
        ``state``: what the swallows that drop it feed."""
        found = self._exits.get(state)
        if found is None:
            n = state[0]
            if self._key[n] is None:  # a swallow
                found = () if self._ways[n] is None else (self._ways[n],)
            else:
                found = tuple(dict.fromkeys(x for s in self.step(state)[3] for x in self.exits(s)))
            self._exits[state] = found
        return found

    def in_order(self, starts) -> list[tuple]:
        """Every state reachable from ``starts``, each before those it may go on to."""
        order, seen = [], set()
        for start in starts:
            if start in seen:
                continue
            seen.add(start)
            stack = [(start, iter(self.step(start)[3]))]
            while stack:
                state, ways = stack[-1]
                for nxt in ways:
                    if nxt not in seen:
                        seen.add(nxt)
                        stack.append((nxt, iter(self.step(nxt)[3])))
                        break
                else:
                    stack.pop()
                    order.append(state)
        order.reverse()
        return order


class NetworkCoverage:
    """The cover points of a network of RN1 routers driven at its channels, for an
    :class:`RN1NetworkModel` (a subclass names its routers' tags, :meth:`router_tag`, and
    its output channels' ``deliver`` bins, :meth:`endpoint_bin`)."""

    def router_tag(self, key) -> str:
        """The tag of router ``key``'s cover points (routers of one tag counted together)."""
        raise NotImplementedError

    def endpoint_bin(self, channel: int) -> str:
        """The ``deliver`` bin of output ``channel``."""
        raise NotImplementedError

    def cover_points(self) -> list[CoverPoint]:
        """The network's situations (docs/dehon.md, "Coverage"): per tag of routers the
        points of :func:`router_cover_points` with ``detail`` (``senders``: the most senders
        that can reach one group of them, from :meth:`tag_senders`), then the network's own:
        the BLOCKED answers in a row a transmission met before it got through, and delivery
        to every endpoint."""
        points = []
        for tag, (mode, senders, *found) in self.tag_senders().items():
            places, outputs, alone = found or (None, None, True)
            points += router_cover_points(
                tag,
                mode,
                senders,
                detail=True,
                ranks="place",
                places=places,
                choices=outputs,
                alone=alone,
            )
        ends = dict.fromkeys(self.endpoint_bin(c) for c in range(self.channels))
        return points + [
            CoverPoint(
                "retries",
                tuple(b for _, b in _RETRIES),
                "a transmission through at its first try, or after BLOCKED answers in a row "
                "(sent again by its sender until it gets through)",
            ),
            CoverPoint(
                "deliver",
                tuple(b for b in ends if b is not None),
                "a transmission acknowledged (CONNECTED) by a receiver at every endpoint: every "
                "way down the network used",
            ),
        ]

    def route_paths(self):
        """Every route a sender at an input channel may send, as the ``(sources, head
        bytes)`` of :func:`grouped_route_senders` (None: not listed, the senders are bounded
        by :func:`group_senders`)."""
        return None

    def tag_senders(self) -> dict[str, tuple[str, int]]:
        """Per tag: the routers' mode and the most transmissions of the senders at the input
        channels (each a sender of its own) that can be at one arbitration group at once,
        asking for its direction (:func:`route_senders`)."""
        routes = self.route_paths()
        if routes is None:
            return group_senders(self, self.router_tag)
        return grouped_route_senders(self, self.router_tag, routes)

    def start_coverage(self) -> Coverage:
        """Count hits in :meth:`cover_points` from now on; the :class:`Coverage` to read."""
        coverage = Coverage(self.cover_points())
        for key, router in self.routers.items():
            router.cover, router.cover_tag = coverage, self.router_tag(key)
            router.cover_detail, router.cover_ranks = True, "place"
        # Per router: its inputs fed by an input channel, its outputs feeding an output one.
        # (Keyed by the router models themselves, so that a deep copy keys its own.)
        self._cover_in: dict[RN1Model, list[tuple[int, int]]] = {}
        self._cover_out: dict[RN1Model, dict[int, int]] = {}
        for (kind, a, pa), (dkind, b, pb) in self._links:
            if kind == "edge" and isinstance(b, RN1Model):
                self._cover_in.setdefault(b, []).append((pb, a))
            if dkind == "edge" and isinstance(a, RN1Model):
                self._cover_out.setdefault(a, {})[pa] = b
        #: Input channels whose transmission waits for its first status (router, input),
        #: output channels whose receiver has not answered yet (router, input), and the
        #: BLOCKED answers in a row per input channel.
        self._sent: dict[int, tuple] = {}
        self._arrived: dict[int, tuple] = {}
        self._streak = [0] * self.channels
        self.coverage = coverage
        return coverage

    def clone(self):
        """An independent copy in the same state (its coverage too), to try traffic on."""
        return copy.deepcopy(self)

    @contextmanager
    def tried(self):
        """A model in this one's state to try traffic on and read the coverage it reaches:
        a :meth:`clone`, or for a sparse network (:meth:`RN1SparseNetworkModel.undone`) this
        model itself, put back as it was afterwards (a copy of hundreds of routers costs
        more than the traffic tried on it)."""
        if not isinstance(self, RN1SparseNetworkModel):
            yield self.clone()
            return
        hits = copy.deepcopy(self.coverage.hits)
        counted = (dict(self._sent), dict(self._arrived), list(self._streak))
        try:
            with self.undone(keep=self.coverage):
                yield self
        finally:
            self.coverage.hits = hits
            self._sent, self._arrived, self._streak = counted

    def _cover_network(self, routers) -> None:
        """Count the network's own points after a step in which ``routers`` decided: a head
        entering from an input channel waits for its first status there (CONNECTED ends the
        row of BLOCKED answers), a head leaving by an output channel for its receiver's
        answer (CONNECTED: delivered)."""
        cover = self.coverage
        for r in routers:
            for port, c in self._cover_in.get(r, ()):
                if r.decisions[port] is not None and r.decisions[port] != "release":
                    self._sent[c] = (r, port)
            outs = self._cover_out.get(r)
            if outs:
                for i, d in enumerate(r.decisions):
                    if isinstance(d, tuple) and d[1] in outs:
                        self._arrived[outs[d[1]]] = (r, i)
        for c, (r, i) in list(self._sent.items()):
            w = r.i_bk[i]
            if not ctrl_of(w) and data_of(w) in STATUS:
                del self._sent[c]
                if data_of(w) == BLOCKED:
                    self._streak[c] += 1
                else:
                    n = self._streak[c]
                    cover.hit("retries", next(b for k, b in reversed(_RETRIES) if n >= k))
                    self._streak[c] = 0
        for c, (r, i) in list(self._arrived.items()):
            w = r.i_bk[i]
            if not ctrl_of(w) and data_of(w) in STATUS:
                del self._arrived[c]
                if data_of(w) != BLOCKED and self.endpoint_bin(c) is not None:
                    cover.hit("deliver", self.endpoint_bin(c))


class RN1BideltaModel(NetworkCoverage, RN1NetworkModel):
    """The bidelta network of :mod:`fattree.spec.rn1_bidelta`: one :class:`RN1Model` per
    router (seeds from :func:`fattree.spec.rn1.router_seed`), wired as the hardware is.
    Network channel ``2e + k`` is endpoint ``e``'s link ``k``; ``random_wiring=False``: the
    regular wiring of the same parts; ``dead``, ``dead_links``: faults, as
    :class:`RN1NetworkModel` takes them."""

    def __init__(
        self,
        endpoints: int = 16,
        seed: int = 1,
        random_wiring: bool = True,
        dead=(),
        dead_links=(),
    ):
        RN1_BIDELTA.check("endpoints", endpoints, model=True)
        RN1_BIDELTA.check("seed", seed, model=True)
        if not isinstance(random_wiring, bool):
            raise TypeError(f"random_wiring must be True or False, not {random_wiring!r}")
        self.net = net = bidelta(endpoints, seed, random_wiring)
        routers = {
            (j, r): (net.mode(j), router_seed(seed, j, r))
            for j in range(net.stages)
            for r in range(net.routers_per_stage)
        }
        inputs = [("ep_out", e, k) for e in range(endpoints) for k in range(ENDPOINT_LINKS)]
        outputs = [("ep_in", e, k) for e in range(endpoints) for k in range(ENDPOINT_LINKS)]
        super().__init__(routers, net.links, inputs, outputs, dead=dead, dead_links=dead_links)

    def router_tag(self, key) -> str:
        return f"S{key[0]}"

    def endpoint_bin(self, channel: int) -> str:
        return f"endpoint {channel // ENDPOINT_LINKS}"

    def route_paths(self):
        net = self.net
        heads = [net.head(t) for t in range(net.endpoints)]
        return [(((c, c),), [h]) for c in range(self.channels) for h in heads]


class RN1UnitTreeModel(NetworkCoverage, RN1NetworkModel):
    """One unit tree of :mod:`fattree.spec.rn1_tree` (``width`` 2 or 8), wired as the
    hardware is; channels as :meth:`UnitTree.inputs` / ``outputs`` order them."""

    def __init__(self, width: int = 2, seed: int = 1):
        RN1_UNIT_TREE.check("width", width, model=True)
        seed = RN1_UNIT_TREE.check("seed", seed, model=True)
        self.tree = tree = unit_tree(width)
        super().__init__(tree.router_modes(seed), tree.links, tree.inputs(), tree.outputs())

    def router_tag(self, key) -> str:
        """The router's layer: ``up``, ``down1`` .. ``down3`` (``down3`` under the top)."""
        return key[0].rstrip("0123456789").rstrip("_")

    def endpoint_bin(self, channel: int) -> str:
        w = self.tree.width
        return f"subtree {channel // w}" if channel < SUBTREES * w else "top"

    def route_paths(self):
        tree, w = self.tree, self.tree.width
        paths = []
        for c in range(self.channels):
            src = c // w if c < SUBTREES * w else None
            for dest in (*range(SUBTREES), None):
                if dest != src:
                    paths.append((((c, c),), [head_for(tree.route(src, dest))]))
        return paths


_LFSR_CYCLE: tuple[list[int], dict[int, int]] | None = None


def _lfsr_jump(state: int, clocks: int) -> int:
    """The router LFSR's state ``clocks`` clock edges (``LFSR_STEPS`` single steps each)
    after ``state``: the 16-bit sequence is walked once and looked up, so a router that sat
    idle for many cycles catches up in one step."""
    global _LFSR_CYCLE
    if _LFSR_CYCLE is None:
        lfsr = LFSRModel(LFSR_WIDTH, seed=1)
        seq = [1]
        while lfsr.step() != 1:
            seq.append(lfsr.state)
        _LFSR_CYCLE = (seq, {x: k for k, x in enumerate(seq)})
    seq, pos = _LFSR_CYCLE
    if state not in pos:  # not on the cycle of 1 (a non-maximal register): walk it
        lfsr = LFSRModel(LFSR_WIDTH, seed=state, steps=LFSR_STEPS)
        for _ in range(clocks):
            lfsr.clock()
        return lfsr.state
    return seq[(pos[state] + LFSR_STEPS * clocks) % len(seq)]


def _router_quiet(r: RN1Model) -> bool:
    """Stepping ``r`` with idle inputs changes nothing but its LFSR."""
    return not (any(r.state) or any(r.busy) or any(r.o_fwd) or any(r.i_bk) or any(r.prev_ctrl))


class RN1SparseNetworkModel(RN1NetworkModel):
    """:class:`RN1NetworkModel`, cycle for cycle, stepping only the elements that are busy
    or get a word this cycle (thousands of routers, few of them in use): a quiet router
    with idle inputs only clocks its LFSR, which is caught up when it next wakes
    (``tests/test_rn1_fat_tree.py`` checks it against the plain stepping)."""

    def __init__(self, routers: dict, links, inputs, outputs, swallows=(), dead=(), dead_links=()):
        super().__init__(routers, links, inputs, outputs, swallows, dead, dead_links)
        elems = list(self.elements.values())
        index = {id(e): n for n, e in enumerate(elems)}
        self._elems = elems
        self._is_router = [isinstance(e, RN1Model) for e in elems]
        # Per element and port: where its forward input comes from and its backward input:
        # (element, port), or (-1, channel) for an edge channel; None: unconnected.
        self._fwd_src = [[None] * len(e.o_fwd) for e in elems]
        self._bk_src = [[None] * len(e.o_fwd) for e in elems]
        self._neighbours = [set() for _ in elems]
        self._edge_in = [None] * self.channels  # channel -> (element, port) it drives
        self._edge_out = [None] * self.channels
        for (kind, a, pa), (dkind, b, pb) in self._links:
            na = index[id(a)] if kind == "router" else -1
            nb = index[id(b)] if dkind == "router" else -1
            if nb >= 0:
                self._fwd_src[nb][pb] = (na, pa if na >= 0 else a)
            if na >= 0:
                self._bk_src[na][pa] = (nb, pb if nb >= 0 else b)
            if na >= 0 and nb >= 0:
                self._neighbours[na].add(nb)
                self._neighbours[nb].add(na)
            if na < 0:
                self._edge_in[a] = (nb, pb)
            if nb < 0:
                self._edge_out[b] = (na, pa)
        self._reset_sparse()

    #: Element index -> its state before the first step inside :meth:`undone` (None: outside).
    _undo: dict[int, dict] | None = None

    @contextmanager
    def undone(self, keep=None):
        """Steps taken inside are undone at the end: the elements they step are saved
        before their first step and put back (``keep``: an object they refer to that is not
        theirs, left as it is: the coverage they count into)."""
        saved = (self.cycle, set(self._busy), set(self._stepped), list(self._clocks))
        self._undo, self._keep = {}, {id(keep): keep}
        for n in self._stepped:  # their decisions are cleared at the next step
            self._save(n)
        try:
            yield
        finally:
            for n, state in self._undo.items():
                self._elems[n].__dict__.clear()
                self._elems[n].__dict__.update(state)
            self._undo = None
            self.cycle, self._busy, self._stepped, self._clocks = saved

    def _save(self, n: int) -> None:
        if n not in self._undo:
            self._undo[n] = copy.deepcopy(self._elems[n].__dict__, dict(self._keep))

    def _reset_sparse(self) -> None:
        self.cycle = 0
        self._busy: set[int] = set()
        self._stepped: set[int] = set()
        self._clocks = [0] * len(self._elems)

    def reset(self) -> None:
        super().reset()
        self._reset_sparse()

    @property
    def o_fwd(self) -> list[int]:
        elems = self._elems
        return [0 if s is None else elems[s[0]].o_fwd[s[1]] for s in self._edge_out]

    @property
    def i_bk(self) -> list[int]:
        elems = self._elems
        return [0 if s is None else elems[s[0]].i_bk[s[1]] for s in self._edge_in]

    def step(self, i_fwd, o_bk) -> None:
        elems = self._elems
        wake = set(self._busy)
        for n in self._busy:
            wake |= self._neighbours[n]
        for c in range(self.channels):
            if i_fwd[c] and self._edge_in[c] is not None:
                wake.add(self._edge_in[c][0])
            if o_bk[c] and self._edge_out[c] is not None:
                wake.add(self._edge_out[c][0])
        inputs = {}
        for n in wake:
            fwd = [
                0 if s is None else (i_fwd[s[1]] if s[0] < 0 else elems[s[0]].o_fwd[s[1]])
                for s in self._fwd_src[n]
            ]
            bk = [
                0 if s is None else (o_bk[s[1]] if s[0] < 0 else elems[s[0]].i_bk[s[1]])
                for s in self._bk_src[n]
            ]
            inputs[n] = (fwd, bk)
            if self._undo is not None:
                self._save(n)
        busy = set()
        for n, (fwd, bk) in inputs.items():
            e = elems[n]
            if self._is_router[n]:
                late = self.cycle - self._clocks[n]
                if late:
                    e.lfsr.state = _lfsr_jump(e.lfsr.state, late)
                self._clocks[n] = self.cycle + 1
            e.step(fwd, bk)
            if not (_router_quiet(e) if self._is_router[n] else e.quiet):
                busy.add(n)
        for n in self._stepped - wake:  # stepped last cycle, idle now: decided nothing
            elems[n].decisions = [None] * len(elems[n].decisions)
        self._busy, self._stepped = busy, wake
        self.cycle += 1
        if self.coverage is not None:
            self._cover_network([elems[n] for n in wake if self._is_router[n]])

    def sync_lfsrs(self) -> None:
        """Bring every router's LFSR up to the current cycle (as the plain stepping has it)."""
        for n, e in enumerate(self._elems):
            if self._is_router[n] and self._clocks[n] != self.cycle:
                e.lfsr.state = _lfsr_jump(e.lfsr.state, self.cycle - self._clocks[n])
                self._clocks[n] = self.cycle


class RN1FatTreeModel(NetworkCoverage, RN1SparseNetworkModel):
    """The fat-tree of unit-tree stages of :func:`fattree.spec.rn1_tree.fat_tree_network`
    (``stages`` 1 or 2), routers and swallow elements wired as the definitions say;
    channels as :attr:`FatTreeNetwork.inputs` / ``outputs`` order them (processing node
    ``e``'s link ``k`` is channel ``2e + k``, then the root's top links); ``dead`` and
    ``dead_links`` as :class:`RN1NetworkModel` takes them (the names
    :meth:`FatTreeNetwork.connected` takes)."""

    def __init__(
        self,
        stages: int = 2,
        seed: int | None = None,
        lfsr_seed: int = 1,
        dispersed=True,
        dead=(),
        dead_links=(),
    ):
        if not isinstance(dispersed, bool):
            raise TypeError(f"dispersed must be True or False, not {dispersed!r}")
        self.net = net = fat_tree_network(stages, seed, lfsr_seed, dispersed)
        super().__init__(
            net.routers, net.links, net.inputs, net.outputs, net.swallows, dead, dead_links
        )

    def router_tag(self, key) -> str:
        """The router's layer in its unit tree (``up``, ``down3`` .. ``down1``), and with
        several stages its stage (``up@2``: the unit trees over the leaf ones)."""
        layer = key[-1].rstrip("0123456789").rstrip("_")
        return layer if self.net.stages == 1 else f"{layer}@{key[0]}"

    def endpoint_bin(self, channel: int) -> str | None:
        """Node ``e``'s two links are its bin, the root's top links one together (``top``:
        the bench sends to and from the top as a parent stage would)."""
        return node_bin(self.net, channel, top=True)

    def route_paths(self):
        """Every node's heads to every other node on both its links, from every top link to
        every node and from every node to the top (one stage only: two are bounded by
        :func:`group_senders`, their 8192 links being too many to follow)."""
        return node_routes(self.net, top=True) if self.net.stages == 1 else None


class RN1HybridModel(NetworkCoverage, RN1SparseNetworkModel):
    """The hybrid fat-tree of :func:`fattree.spec.rn1_hybrid.hybrid_network`: bidelta leaf
    clusters of ``cluster`` nodes (12, 48, 192), alone (``stages=1``) or under one stage of
    8-wide unit trees (``stages=2``), routers and swallows wired as the definitions say;
    channels as :attr:`HybridNetwork.inputs` / ``outputs`` order them (node ``e``'s link
    ``k`` is channel ``2e + k``, then the top links)."""

    def __init__(
        self,
        cluster: int = 12,
        stages: int = 2,
        seed: int | None = None,
        lfsr_seed: int = 1,
        dispersed: bool = True,
    ):
        self.net = net = hybrid_network(cluster, stages, seed, lfsr_seed, dispersed)
        super().__init__(net.routers, net.links, net.inputs, net.outputs, net.swallows)

    def router_tag(self, key) -> str:
        """A cluster router's bidelta stage (``S0``, ``S1`` ...), a unit-tree router's
        layer and stage (``up@2``, ``down3@2`` ...)."""
        name = key[-1].rstrip("0123456789").rstrip("_")
        return name.upper() if key[0] == 1 else f"{name}@{key[0]}"

    def endpoint_bin(self, channel: int) -> str | None:
        """A node's two links are its bin (the top links: none, no bench drives them)."""
        return node_bin(self.net, channel)

    def route_paths(self):
        """Every node's heads to every other node on both its links (the nodes of one
        cluster have the same heads to every other node: one route for them all)."""
        return node_routes(self.net, self.net.cluster)


def node_bin(net, channel: int, top: bool = False) -> str | None:
    """The ``deliver`` bin of output ``channel`` of a network of processing nodes ``net``
    (a :class:`~fattree.spec.rn1_tree.FatTreeNetwork`): node ``e``'s two links are ``node
    e``; the channels after them (the root's top links) are ``top`` with ``top``, else
    none (not driven)."""
    if channel < ENDPOINT_LINKS * net.nodes:
        return f"node {channel // ENDPOINT_LINKS}"
    return "top" if top else None


def node_routes(net, block: int = 1, top: bool = False) -> list[tuple[tuple, list[int]]]:
    """Every node's heads to every other node on both its links, as the ``(sources, head
    bytes)`` of :func:`grouped_route_senders` (a node's link ``k`` is channel ``2e + k``, a
    sender of its own). ``block``: runs of that many nodes whose heads to every node but
    themselves are the same (a hybrid's cluster: a route leaves it by the same head bytes
    from every node in it, and inside it goes by the destination's alone), so that each
    destination's heads are found once per block. ``top``: also from each of the root's top
    links (the channels after the nodes') to every node, and from every node to the top."""
    routes = []
    if top:
        nodes = ENDPOINT_LINKS * net.nodes
        tops = range(nodes, len(net.inputs))
        routes += [(((c, c),), net.heads(None, b)) for c in tops for b in range(net.nodes)]
        routes.append((tuple((c, c) for c in range(nodes)), net.heads(0, None)))
    for first in range(0, net.nodes, block):
        members = range(first, min(first + block, net.nodes))
        links = {a: [(ENDPOINT_LINKS * a + k,) * 2 for k in range(ENDPOINT_LINKS)] for a in members}
        everyone = tuple(link for a in members for link in links[a])
        for b in range(net.nodes):
            if b not in links:
                routes.append((everyone, net.heads(first, b)))
                continue
            senders = [a for a in members if a != b]
            if senders:
                sources = tuple(link for a in senders for link in links[a])
                routes.append((sources, net.heads(senders[0], b)))
    return routes
