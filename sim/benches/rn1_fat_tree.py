"""cocotb bench of DeHon's fat-tree network (``rn1-fat-tree-network``: :class:`fattree.hdl.
rn1_fat_tree.RN1FatTree` of 1 or 2 unit-tree stages, routers and swallows as instances of
shared modules) against :class:`RN1FatTreeModel`, and of the hybrid fat-tree
(``rn1-hybrid``, :class:`fattree.hdl.rn1_hybrid.RN1Hybrid`) against :class:`RN1HybridModel`.

``frames`` transmissions between node pairs whose lowest common node lies at every level in
turn (:func:`fattree.sim.checks.rn1.level_pairs`; the hybrid: random pairs), each with its
head bytes (one per unit tree or cluster crossed), closed with TURN now and then, answered
BLOCKED now and then by a busy receiver and retried. Checks (:func:`network_phase`): every
output word of every channel against the model every cycle, and every transmission
delivered exactly once to its node with its bytes.
"""

from __future__ import annotations

import random
import re
import time

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.benches.rn1 import Ports
from fattree.sim.checks.rn1 import (
    CHECKS,
    Knobs,
    level_pairs,
    network_phase,
    network_queues,
)
from fattree.sim.cocotb_runner import bench_config, clock_and_reset, write_summary
from fattree.sim.models.rn1 import RN1FatTreeModel, RN1HybridModel
from fattree.sim.scoreboard import Scoreboard

#: Endpoints' behaviour: turns and busy receivers, so statuses, turned segments and retries
#: cross the swallows both ways.
KNOBS = Knobs(start=0.5, turn=0.3, busy=0.1)


def _model(config):
    p = config["params"]
    if config["design"] == "rn1-hybrid":
        return RN1HybridModel(p["cluster"], p["stages"], None, p["seed"])
    return RN1FatTreeModel(p["stages"], None, p["seed"])


def _pairs(net, frames: int, rng: random.Random):
    nodes = net.nodes
    if nodes & (nodes - 1) == 0 and (nodes.bit_length() - 1) % 2 == 0:
        return level_pairs(nodes, frames, rng)
    pairs = []
    while len(pairs) < frames:
        a, b = rng.randrange(nodes), rng.randrange(nodes)
        if a != b:
            pairs.append((a, b))
    return pairs


@cocotb.test()
async def traffic(dut):
    config = bench_config()
    rng = random.Random(config["seed"])
    model = _model(config)
    frames = config["bench"].get("frames", 64)
    n = model.channels
    ports = Ports(dut, n)
    scoreboard = Scoreboard(CHECKS, mutate=config["bench"].get("mutation", False))
    queues, want = network_queues(model.net, _pairs(model.net, frames, rng), rng)
    ports.drive([0] * n, [0] * n)
    await clock_and_reset(dut)
    started = time.perf_counter()
    counts = await network_phase(
        model,
        scoreboard,
        ports.sample,
        ports.drive,
        lambda: FallingEdge(dut.clk),
        queues,
        want,
        KNOBS,
        random.Random(rng.getrandbits(32)),
        limit=200 * frames + 2000,
    )
    seconds = time.perf_counter() - started
    cycles = counts.pop("cycles")
    write_summary(
        config,
        scoreboard.summary(
            cycles,
            channels=n,
            **counts,
            seconds=round(seconds, 3),
            cycles_per_second=round(cycles / seconds, 1) if seconds else None,
        ),
    )
    scoreboard.raise_on_mismatch()


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
    # The shared router modules, as the export names them (hdl/rn1_modules.py).
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
