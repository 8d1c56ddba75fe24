"""``fattree soak``: the RTL on Verilator against the reference model, every output of every
cycle (sim/soak/, docs/verification.md "Soak").

Short soaks (small parameter points: a few thousand messages in seconds once the harness is
built) of the circuit tree run by default, of every other design with ``--run-slow``
(each builds a harness of its own); the 10^6-message run of the 16-leaf circuit tree is
``slow``. A broken reference (``--mutate-model``), a single wrong expected value in the middle
of a run and a broken RTL output must all be reported, at the right cycle and port.
"""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest

from fattree.designs import get_design, parse_params
from fattree.scripts.main import main
from fattree.sim.models.circuit import RouterModel
from fattree.sim.soak import SOAKS, run_soak, soak_class
from fattree.sim.soak.harness import Harness, build_harness, cxx_name, top_ports

SMALL = {
    "circuit-tree-paper": ["leaves=4"],
    "circuit-tree": ["leaves=4"],
    "scheduler": ["w=4"],
    "leiserson-tree": ["leaves=4"],
    "hypercube": ["dim=2"],
    "rn1-bidelta": ["endpoints=4"],
    "rn1-bidelta-stream": ["endpoints=4"],
}


#: Each design's soak builds a Verilator harness of its own (tens of CPU-seconds): the default
#: run covers the circuit tree's (the tests below reuse its harness), the other designs' are
#: slow points.
DEFAULT_SOAK = "circuit-tree"
EVERY_SOAK = [
    name if name == DEFAULT_SOAK else pytest.param(name, marks=pytest.mark.slow) for name in SOAKS
]
#: The two circuit trees, whose soaks report patterns, stalls and segments.
CIRCUIT_TREES = [DEFAULT_SOAK, pytest.param("circuit-tree-paper", marks=pytest.mark.slow)]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """One build root for every test worker: each design's harness is built once (the
    harness build takes a lock of its own folder)."""
    shared = tmp_path_factory.getbasetemp().parent / "soak-shared"
    shared.mkdir(exist_ok=True)
    return shared


def _params(name: str, extra=()):
    design = get_design(name)
    defaults = [f"{k}={v}" for k, v in getattr(soak_class(name), "DEFAULTS", {}).items()]
    return design, parse_params(design, defaults + SMALL[name] + list(extra))


# -- short soaks of every design ---------------------------------------------------------------


@pytest.mark.parametrize("name", EVERY_SOAK)
def test_short_soak_passes(name, root):
    design, params = _params(name)
    result = run_soak(design, params, messages=3000, seed=2, root=root)
    d = result.as_dict()
    assert d["mismatches"] == 0, d["first_mismatch"]
    assert d["passed"]
    assert d["checked"] >= 3000 and d["cycles"] > 0
    assert d["cycles_per_second"] > 0


@pytest.mark.parametrize("name", CIRCUIT_TREES)
def test_circuit_tree_soak_covers_the_patterns_and_stalls(name, root):
    design, params = _params(name)
    result = run_soak(design, params, messages=4000, seed=5, root=root, jobs=1)
    details = result.details
    # Every phase of the benches, retries after rejects, receivers that stall and reject.
    assert set(details["messages_by_phase"]) == {
        "random",
        "transpose",
        "bit-reversal",
        "shift",
        "hotspot",
    }
    assert sum(details["messages_by_phase"].values()) == details["delivered"] == 4000
    assert details["rejects"] > 0 and details["backpressure_cycles"] > 0
    if name == "circuit-tree":  # stalled receivers fill their stores and turn heads away
        assert details["receiver_rejects"] > 0
    assert result.mismatches == 0


@pytest.mark.parametrize("name", CIRCUIT_TREES)
def test_segments_give_the_same_run_for_any_jobs(name, root, monkeypatch):
    # Three segments (the design reset between them), planned in this process: the workers
    # get each segment's size and seed.
    design, params = _params(name)
    monkeypatch.setattr(soak_class(name), "SEGMENT", 1000)
    one = run_soak(design, params, messages=2500, seed=4, root=root, jobs=1)
    two = run_soak(design, params, messages=2500, seed=4, root=root, jobs=2)
    assert one.details["segments"] == two.details["segments"] == 3
    assert one.mismatches == two.mismatches == 0
    assert one.checked == two.checked == 2500
    assert (one.cycles, one.details["rejects"]) == (two.cycles, two.details["rejects"])


# -- a wrong reference is reported -------------------------------------------------------------


@pytest.mark.parametrize("name", EVERY_SOAK)
def test_mutate_model_fails_the_soak(name, root, capsys):
    code = main(
        ["soak", name, "--messages", "500", "--json", "--mutate-model", "--build-root", str(root)]
        + [a for p in SMALL[name] for a in ("--param", p)]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert data["mismatches"] >= 1 and not data["passed"]
    assert data["first_mismatch"]["got"] != data["first_mismatch"]["expected"]


@pytest.mark.parametrize("name", CIRCUIT_TREES)
def test_one_wrong_value_mid_run_is_found_at_its_cycle_and_port(name, root):
    design, params = _params(name)
    cls = soak_class(name)
    soak = cls(params, messages=600, seed=3)
    layout = soak.layout()
    from fattree.designs import build_dir, elaborate_verilog, top_name

    top = top_name(design)
    where = build_dir("soak", design, params, root)  # the harness run_soak builds too
    exe = build_harness(where, top, elaborate_verilog(design, params), layout)
    chunks = list(soak.chunks(chunk=128))
    assert len(chunks) > 3
    # Flip the expected rx payload of node 2 at the cycle where it first carries data.
    column = [p.name for p in layout.outputs].index("rx__2__payload")
    flat = np.concatenate([c[1] for c in chunks])
    cycle = int(np.flatnonzero(flat[:, column])[0])
    harness = Harness(exe, layout)
    at = 0
    for stimulus, expected, _q, _e in chunks:
        if at <= cycle < at + len(expected):
            expected = expected.copy()
            expected[cycle - at, column] ^= 1
        harness.send(stimulus, expected)
        at += len(expected)
    totals = harness.finish()
    assert totals["mismatches"] == 1
    assert totals["first"][:2] == (cycle, "rx__2__payload")
    assert totals["first"][2] == int(flat[cycle, column]) ^ 1
    assert totals["first"][3] == int(flat[cycle, column])


def _bit0_inverted(verilog: str, top: str, port: str) -> str:
    """``verilog`` with bit 0 of output ``port`` of ``top`` inverted: the top renamed, and a
    wrapper of the old name that passes every other port through."""
    ports = top_ports(verilog, top)
    inner = re.sub(
        rf"^module {re.escape(top)}\(", f"module {top}_rtl(", verilog, count=1, flags=re.M
    )
    lines = [f"module {top}({', '.join(ports)});"]
    for name, (direction, width) in ports.items():
        bits = f"[{width.bits - 1}:0] " if width.bits > 1 else ""
        lines.append(f"  {direction} {bits}{name};")
    bits = ports[port][1].bits
    lines.append(f"  wire [{bits - 1}:0] rtl;")
    connect = ", ".join(f".{n}({'rtl' if n == port else n})" for n in ports)
    lines += [f"  {top}_rtl inner({connect});", f"  assign {port} = rtl ^ 1;", "endmodule"]
    return inner + "\n".join(lines) + "\n"


def test_a_wrong_rtl_payload_is_caught_in_every_valid_cycle_only(root, tmp_path):
    # The fast tree's receive payload is not defined while not valid: the soak compares it in
    # exactly the cycles it is valid, so an RTL whose node 1 payload has bit 0 inverted is
    # caught at its first valid cycle, and once per valid cycle.
    design, params = _params("circuit-tree")
    soak = soak_class("circuit-tree")(params, messages=600, seed=3)
    layout = soak.layout()
    from fattree.designs import elaborate_verilog, top_name

    top = top_name(design)
    verilog = _bit0_inverted(elaborate_verilog(design, params), top, "rx__1__payload")
    exe = build_harness(tmp_path, top, verilog, layout)
    chunks = list(soak.chunks())
    names = [p.name for p in layout.outputs]
    flat = np.concatenate([c[1] for c in chunks])
    valid = flat[:, names.index("rx__1__valid")]
    payload = flat[:, names.index("rx__1__payload")]
    cycle = int(np.flatnonzero(valid)[0])
    harness = Harness(exe, layout)
    for stimulus, expected, _q, _e in chunks:
        harness.send(stimulus, expected)
    totals = harness.finish()
    assert totals["first"] == (
        cycle,
        "rx__1__payload",
        int(payload[cycle]),
        int(payload[cycle]) ^ 1,
    )
    assert totals["mismatches"] == int(valid.sum()) > 0
    assert not valid.all()  # and cycles not valid, whose payload was not compared


# -- the command line --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["soak", "selector"], "design must be one of circuit-tree-paper"),
        (["soak", "hypercube", "-p", "dim=9"], "dim"),
        (["soak", "circuit-tree-paper", "--messages", "0"], "--messages must be at least 1, not 0"),
        (["soak", "circuit-tree-paper", "--jobs", "0"], "--jobs must be at least 1, not 0"),
        (["soak", "circuit-tree-paper", "-p", "width=64", "-p", "length=4"], "at most 64"),
        (["soak", "circuit-tree-paper", "-p", "nope=1"], "has no parameter 'nope'"),
        (["soak", "circuit-tree-paper", "-b", "backpressure=100"], "backpressure"),
    ],
)
def test_bad_input_is_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_text_report(root, capsys):
    argv = ["soak", "circuit-tree", "-p", "leaves=4", "-n", "300", "--build-root", str(root)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "300 messages checked" in out and "mismatches 0" in out and out.strip()[-4:] == "PASS"


# -- the harness's pieces ----------------------------------------------------------------------


def test_cxx_names_follow_verilator():
    assert cxx_name("tx__1__payload") == "tx___05F1___05Fpayload"
    assert cxx_name("rx__0__ready") == "rx___05F0___05Fready"
    assert cxx_name("start") == "start"


def test_top_ports_reads_widths():
    text = "module a(x, y);\n  input [19:0] x;\n  output y;\nendmodule\n"
    ports = top_ports(text, "a")
    assert ports["x"][0] == "input" and ports["x"][1].bits == 20
    assert ports["y"][0] == "output" and ports["y"][1].bits == 1
    with pytest.raises(ValueError, match="module b not found"):
        top_ports(text, "b")


# -- the router model's unrolled step against its earlier, loop-by-loop form -------------------


def _reference_step(self, in_valid, in_data, out_reject, out_ack):
    """RouterModel.step as it was before it was unrolled for speed (commit 30d0c99)."""
    IDLE, FWD, DEAD = 0, 1, 2
    A, B, C, D = 0, 1, 2, 3
    if self.quiet and not (any(in_valid) or any(out_reject) or any(out_ack)):
        self.cycle += 1
        return [None] * 4
    state, busy = self.state, self.busy
    header = [state[i] == IDLE and bool(in_valid[i]) for i in range(4)]
    bit = [in_data[i] & 1 for i in range(4)]
    release = [busy[o] and bool(out_reject[o] or out_ack[o]) for o in range(4)]
    r = self.lfsr_bit
    grant, grant_to, reject = [False] * 4, [0] * 4, [False] * 4
    up_a = header[A] and not bit[A]
    up_b = header[B] and not bit[B]
    pref_a, pref_b = r, 1 - r
    port_a = pref_a ^ busy[C + pref_a]
    taken_by_a = up_a and port_a == pref_b
    port_b = pref_b ^ int(bool(busy[C + pref_b]) or taken_by_a)
    if up_a:
        grant[A], grant_to[A] = True, C + port_a
    for o in (A, B):
        other = B if o == A else A
        want = int(o == B)
        t_req = header[other] and bit[other]
        c_req = header[C] and bit[C] == want
        d_req = header[D] and bit[D] == want
        free = not busy[o]
        if t_req:
            grant[other], grant_to[other], reject[other] = free, o, not free
        if c_req:
            win = free and not t_req
            reject[C] = not win
            if win:
                grant[C], grant_to[C] = True, o
        if d_req:
            win = free and not t_req and not c_req
            reject[D] = not win
            if win:
                grant[D], grant_to[D] = True, o
    if up_b:
        grant[B], grant_to[B] = True, C + port_b
    n_state, n_route = list(state), list(self.route)
    n_bk_reject = [int(x) for x in reject]
    n_bk_ack = [0] * 4
    for i in range(4):
        rel_rej = state[i] == FWD and bool(out_reject[self.route[i]])
        rel_ack = state[i] == FWD and bool(out_ack[self.route[i]])
        if grant[i]:
            n_state[i], n_route[i] = FWD, grant_to[i]
        elif reject[i]:
            n_state[i] = DEAD
        elif rel_rej or rel_ack:
            n_state[i] = DEAD
            n_bk_reject[i], n_bk_ack[i] = int(rel_rej), int(rel_ack)
        elif state[i] == DEAD and not in_valid[i]:
            n_state[i] = IDLE
    n_busy, n_owner = list(busy), list(self.owner)
    n_valid, n_data = [0] * 4, [0] * 4
    for o in range(4):
        claim_by = None
        for i in range(4):
            if i != o and grant[i] and grant_to[i] == o:
                claim_by = i
        if claim_by is not None:
            n_busy[o], n_owner[o] = 1, claim_by
        elif release[o]:
            n_busy[o] = 0
        src = self.owner[o]
        go = busy[o] and not release[o] and state[src] == FWD and bool(in_valid[src])
        n_valid[o] = int(go)
        n_data[o] = in_data[src] if go else 0
    decisions = ["grant" if grant[i] else "reject" if reject[i] else None for i in range(4)]
    self.state, self.route, self.busy, self.owner = n_state, n_route, n_busy, n_owner
    self.out_valid, self.out_data = n_valid, n_data
    self.bk_reject, self.bk_ack = n_bk_reject, n_bk_ack
    self.quiet = not (
        any(n_busy) or any(n_state) or any(n_valid) or any(n_bk_reject) or any(n_bk_ack)
    )
    self.cycle += 1
    return decisions


_REGISTERS = ("state", "route", "busy", "owner", "out_valid", "out_data", "bk_reject", "bk_ack")


@pytest.mark.parametrize("seed", [1, 7, 0xACE1])
def test_unrolled_router_step_is_the_same_machine(seed):
    """Random (also protocol-breaking) inputs, register by register, 20,000 cycles."""
    rng = random.Random(seed)
    new, old = RouterModel(seed), RouterModel(seed)
    for _ in range(20_000):
        busy = rng.random()
        inputs = (
            [int(rng.random() < busy) for _ in range(4)],
            [rng.getrandbits(8) for _ in range(4)],
            [int(rng.random() < 0.1) for _ in range(4)],
            [int(rng.random() < 0.1) for _ in range(4)],
        )
        new.step(*inputs)
        want = _reference_step(old, *inputs)
        assert new.decisions == want
        for name in _REGISTERS:
            assert getattr(new, name) == getattr(old, name), name
        assert new.quiet == old.quiet and new.cycle == old.cycle


# -- the headline: 10^6 messages on the 16-leaf circuit tree -----------------------------------


@pytest.mark.slow
def test_a_million_messages_on_the_16_leaf_circuit_tree(root):
    design = get_design("circuit-tree-paper")
    params = parse_params(design, [])
    result = run_soak(design, params, messages=1_000_000, seed=1, root=root, jobs=2)
    assert result.mismatches == 0, result.first_mismatch
    assert result.checked == 1_000_000
    # Issue 14: under 20 minutes on this machine's 2 cores. Asserted on CPU time (the model's,
    # spread over its two processes, and the simulator's): the wall time also holds whatever
    # else the shared machine runs.
    assert result.model_cpu_seconds / 2 + result.harness_cpu_seconds < 20 * 60
