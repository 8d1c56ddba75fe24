"""cocotb bench of DeHon's fat-tree networks without endpoints, driven at their channels:
the fat-tree of unit-tree stages (``rn1-fat-tree-network``:
:class:`fattree.hdl.rn1.fat_tree.RN1FatTree` of 1 or 2 stages, routers and swallows as
instances of shared modules) against :class:`RN1FatTreeModel`, and the hybrid fat-tree
(``rn1-hybrid``, :class:`fattree.hdl.rn1.hybrid.RN1Hybrid`) against :class:`RN1HybridModel`.
The fat-tree with an endpoint on every node (``rn1-fat-tree``) has the stream bench,
:mod:`fattree.sim.benches.rn1_stream`.

First, at the fat-tree, one head from node 0 to a node at each level alone in the idle network
(:func:`head_phase`): the cycles until its first word reaches the node, the figures of
``dehon-latency`` measured on the RTL. Then ``frames`` transmissions between node pairs whose lowest
common node lies at every level in turn (:func:`fattree.sim.checks.rn1.level_pairs`, an
eighth of them from the root's top links or to the top, as a stage above would use them;
the hybrid: random pairs), each with its head bytes (one per unit tree or cluster crossed), closed
with TURN now and then, answered BLOCKED now and then by a busy receiver and retried. Checks
(:func:`network_phase`): every output word of every channel against the model every cycle, and
every transmission delivered exactly once to its node (or the top) with its bytes. The
model counts its cover points in every run, and the bench ends with rounds that close what
the traffic left of them, each tried on the model first (undone after the try)
(:func:`~fattree.sim.checks.rn1.network_hole_rounds`; ``steered`` in the summary).
"""

from __future__ import annotations

import functools
import random
import re
import time

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.benches.rn1 import Ports
from fattree.sim.checks.rn1 import (
    CHECKS,
    STEER_LIMIT,
    Knobs,
    level_pairs,
    network_hole_rounds,
    network_phase,
    network_queues,
)
from fattree.sim.cocotb_runner import bench_config, clock_and_reset, write_summary
from fattree.sim.models.rn1 import RN1FatTreeModel, RN1HybridModel
from fattree.sim.scoreboard import Scoreboard
from fattree.spec.rn1 import CONNECTED, DROP, ctrl_of, word
from fattree.spec.rn1_bidelta import ENDPOINT_LINKS

#: Endpoints' behaviour: turns and busy receivers, so statuses, turned segments and retries
#: cross the swallows both ways.
KNOBS = Knobs(start=0.5, turn=0.3, busy=0.1)

#: Candidate rounds tried on a copy of the model to close the coverage's holes (none when
#: the traffic left no hole).
HOLE_TRIES = 400


def _model(config):
    p = config["params"]
    if config["design"] == "rn1-hybrid":
        return RN1HybridModel(p["cluster"], p["stages"], None, p["seed"])
    return RN1FatTreeModel(p["stages"], None, p["seed"])


def _pairs(net, frames: int, rng: random.Random, top: bool = False):
    """``frames`` (source, destination) pairs: at every level in turn (the fat-tree), with
    ``top`` an eighth of them from the root's top links to a node or from a node to the top
    (None), as a stage above would send and take them; else at random."""
    nodes = net.nodes
    if nodes & (nodes - 1) == 0 and (nodes.bit_length() - 1) % 2 == 0:
        tops = frames // 8 if top else 0
        pairs = level_pairs(nodes, frames - tops, rng)
        for k in range(tops):
            node = rng.randrange(nodes)
            pairs.append((None, node) if k % 2 == 0 else (node, None))
        return pairs
    pairs = []
    while len(pairs) < frames:
        a, b = rng.randrange(nodes), rng.randrange(nodes)
        if a != b:
            pairs.append((a, b))
    return pairs


def _names(n: int) -> list[str]:
    return [f"o_fwd[{c}]" for c in range(n)] + [f"i_bk[{c}]" for c in range(n)]


async def head_phase(model, scoreboard: Scoreboard, ports: Ports, tick, limit: int = 64):
    """For each tree level, node 0 sends its head bytes, one data byte and DROP to the node
    ``3 << 2 (level - 1)`` (lowest common node at that level) into the idle network; the
    destination answers CONNECTED as the close reaches it (a held path is released only by
    its status), and the phase waits until the network is idle again. Every word compared
    with the model every cycle. Returns the cycles from the first head byte to the first
    word at the destination, per level (None: it never came)."""
    n, nodes = model.channels, model.net.nodes
    names = _names(n)
    found = []
    for level in range(1, (nodes.bit_length() - 1) // 2 + 1):
        dest = 3 << 2 * (level - 1)
        words = [word(1, h) for h in model.net.heads(0, dest)] + [word(1, 0), word(0, DROP)]
        arrived = out = None
        last = status = 0
        for cycle in range(limit):
            o_fwd, i_bk = ports.sample()
            where = f"head to level {level} cycle {cycle}"
            ref = model.o_fwd + model.i_bk
            scoreboard.compare("cycle_mismatches", where, o_fwd + i_bk, ref, names)
            if out is None:
                ends = [ENDPOINT_LINKS * dest + k for k in range(ENDPOINT_LINKS)]
                out = next((c for c in ends if ctrl_of(o_fwd[c])), None)
                arrived = None if out is None else cycle
            status = status or i_bk[0]
            if status and not any(o_fwd + i_bk):
                break  # the status is back and the released path is idle again
            i_fwd, o_bk = [0] * n, [0] * n
            i_fwd[0] = words[cycle] if cycle < len(words) else 0
            if out is not None:
                # The close (a word after a byte) gets its answer in the cycle it comes.
                if ctrl_of(last) and not ctrl_of(o_fwd[out]):
                    o_bk[out] = word(0, CONNECTED)
                last = o_fwd[out]
            ports.drive(i_fwd, o_bk)
            model.step(i_fwd, o_bk)
            await tick()
        found.append(arrived)
    return found


@cocotb.test()
async def traffic(dut):
    config = bench_config()
    rng = random.Random(config["seed"])
    model = _model(config)
    # Counted in every run: the last rounds steer into its holes, with or without --coverage.
    coverage = model.start_coverage()
    frames = config["bench"].get("frames", 64)
    n = model.channels
    ports = Ports(dut, n)
    scoreboard = Scoreboard(CHECKS, mutate=config["bench"].get("mutation", False))
    pairs = _pairs(model.net, frames, rng, top=isinstance(model, RN1FatTreeModel))
    queues, want = network_queues(model.net, pairs, rng)
    ports.drive([0] * n, [0] * n)
    await clock_and_reset(dut)
    heads = None
    if isinstance(model, RN1FatTreeModel):
        heads = await head_phase(model, scoreboard, ports, lambda: FallingEdge(dut.clk))
    started = time.perf_counter()  # cycles/s of the traffic phase alone
    # Every phase: this model against the design at these ports, a cycle per falling edge.
    phase = functools.partial(
        network_phase, model, scoreboard, ports.sample, ports.drive, lambda: FallingEdge(dut.clk)
    )
    counts = await phase(
        queues, want, KNOBS, random.Random(rng.getrandbits(32)), limit=200 * frames + 2000
    )
    cycles = counts.pop("cycles")
    steer_cycles, counts["steered"] = await _steer(
        model, scoreboard, phase, random.Random(rng.getrandbits(32))
    )
    cycles += steer_cycles
    seconds = time.perf_counter() - started
    write_summary(
        config,
        scoreboard.summary(
            cycles,
            channels=n,
            head_cycles=heads,
            **counts,
            seconds=round(seconds, 3),
            cycles_per_second=round(cycles / seconds, 1) if seconds else None,
            **({"coverage": coverage.as_dict()} if config["bench"].get("coverage") else {}),
        ),
    )
    scoreboard.raise_on_mismatch()


async def _steer(model, scoreboard: Scoreboard, phase, rng) -> tuple[int, int]:
    """The rounds that close what the traffic left of the model's coverage, each tried on a
    copy of the model first (:func:`~fattree.sim.checks.rn1.network_hole_rounds`; none once
    the run has failed: the design no longer follows the model they are tried on), each run
    by ``phase`` (:func:`network_phase` on the design); their cycles and transmissions."""
    cycles = steered = 0
    tries = 0 if scoreboard.mismatches else HOLE_TRIES
    for name, queues, want, knobs, seed in network_hole_rounds(model, rng, tries=tries):
        run = await phase(queues, want, knobs, random.Random(seed), limit=STEER_LIMIT, name=name)
        cycles += run["cycles"]
        steered += sum(want.values())
        if scoreboard.mismatches:
            break
    return cycles, steered


#: Verilator options of :func:`run_hierarchical`: the router modules as hierarchical blocks,
#: built by Verilator itself (its ``_hier.mk``).
HIERARCHICAL_ARGS = ("--hierarchical", "--build", "-j", "2")


def run_hierarchical(design: str, params: dict, frames: int, root, seed: int = 3) -> dict:
    """This bench on Verilator with every router module a hierarchical block (``hier_block``),
    verilated and compiled once and placed 4160 times: plain Verilator verilates every
    instance's copy of the logic (two stages went past this machine's 23 GB and were killed),
    and ``fattree sim``'s runner (:mod:`fattree.sim.cocotb_runner`) passes no
    ``--hierarchical``. Returns the bench's summary with ``build_seconds`` and
    ``test_seconds``."""
    import json
    from pathlib import Path

    from cocotb_tools.runner import get_runner

    from fattree import toolchain
    from fattree.designs import build_dir, elaborate_verilog, get_design, top_name
    from fattree.sim import cocotb_runner

    toolchain.require("verilator")
    d = get_design(design)
    top = top_name(d)
    where = build_dir("sim/verilator-hier", d, params, Path(root)).resolve()
    where.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    source = where / f"{top}.v"
    text = elaborate_verilog(d, params)
    if not source.exists() or source.read_text() != text:
        source.write_text(text)
    control = where / "hier.vlt"
    lines = ["`verilator_config", f'public_flat_rw -module "{top}" -var "*"']
    # The shared router modules, as the export names them (hdl/rn1/modules.py).
    routers = re.findall(r"^module (rn1_router_\w+)\(", text, re.M)
    lines += [f'hier_block -module "{name}"' for name in routers]
    control.write_text("\n".join(lines) + "\n")
    runner = get_runner("verilator")
    args = [*cocotb_runner._build_args("verilator"), *HIERARCHICAL_ARGS]
    with cocotb_runner._verilator_make_fix():
        runner.build(
            sources=[control, source],
            hdl_toplevel=top,
            build_dir=where,
            build_args=args,
            timescale=cocotb_runner.TIMESCALE,
            log_file=where / "build.log",
        )
    built = time.perf_counter()
    summary = where / "summary.json"
    summary.unlink(missing_ok=True)
    config = {
        "design": design,
        "params": params,
        "simulator": "verilator",
        "family": None,
        "ports": "native",
        "seed": seed,
        "bench": {"frames": frames, "mutation": False},
        "summary": str(summary),
    }
    try:
        runner.test(
            test_module=__name__,
            hdl_toplevel=top,
            build_dir=where,
            test_dir=where,
            seed=seed,
            extra_env={"FATTREE_BENCH": json.dumps(config)},
            timescale=cocotb_runner.TIMESCALE,
            log_file=where / "test.log",
        )
    except SystemExit:  # the runner exits when the cocotb test fails; the summary says why
        pass
    result = json.loads(summary.read_text()) if summary.exists() else {"log": str(where)}
    result["build_seconds"] = round(built - started, 1)
    result["test_seconds"] = round(time.perf_counter() - built, 1)
    return result
