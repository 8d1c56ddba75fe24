"""The RTL half of each experiment that puts the hardware beside its model (``--rtl``).

An experiment never builds hardware (docs/architecture.md, tests/test_layers.py): the part
that runs on the RTL is here, in the checks layer, and takes its design from the design table
by name. The experiment keeps its traffic, its counts and its comparison with the model, and
calls these functions when asked for the RTL (importing them loads no Amaranth; building a
design does).

* :func:`circuit_tree_bench`: a cocotb module on ``circuit-tree-paper`` (or ``circuit-tree``)
  through the runner (the fault bench :mod:`fattree.sim.benches.circuit_faults`, the load bench
  :mod:`fattree.sim.benches.circuit_tree_load`);
* :func:`rn1_network_run`: an RN1 network (``rn1-bidelta``, or one stage of
  ``rn1-fat-tree-network``) in amaranth.sim, cycle by cycle under the caller's traffic;
* :func:`leiserson_tree_trace`: frames into ``leiserson-tree`` in amaranth.sim, every leaf's
  receive wires and ``root_o`` in every cycle.

Each reads the outputs of a cycle first, then drives its inputs, then waits for the edge, as
the checks do.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["circuit_tree_bench", "network_load_bench", "rn1_network_run", "leiserson_tree_trace"]


def circuit_tree_bench(
    bench_module: str,
    params: dict,
    simulator: str,
    *,
    seed: int,
    bench: dict,
    root: Path | None = None,
    design: str = "circuit-tree-paper",
):
    """Run the cocotb module ``bench_module`` (a name) on the generated Verilog of ``design``
    (a circuit tree) with ``params``; the runner's
    :class:`~fattree.sim.cocotb_runner.BenchResult`.
    """
    from ...designs import get_design
    from ..cocotb_runner import run_bench

    return run_bench(
        get_design(design),
        params,
        simulator,
        seed=seed,
        bench=bench,
        root=root,
        bench_module=bench_module,
    )


def rn1_network_run(network: str, endpoints: int, wiring: int, traffic_for):
    """Drive an RN1 network's RTL in amaranth.sim: ``RN1Bidelta`` of ``endpoints`` built with
    seed ``wiring`` (``network`` ``"bidelta"``), or ``RN1FatTree`` of one stage (its wiring
    the regular one; ``"fat-tree"``).

    ``traffic_for(n, heads)`` makes the traffic of the run for the network's ``n`` ports and
    its route heads, ``heads(src, dest, fill) -> list of head bytes`` (from the definitions
    the network was built from). The traffic is driven while ``traffic.running``; each cycle
    ``traffic.cycle(o_fwd, i_bk)`` gets the outputs and gives ``(i_fwd, o_bk)`` to drive.
    Returns the traffic after the run (its counts are the caller's)."""
    from ...designs import get_design
    from ..testbench import simulate

    if network == "bidelta":
        dut = get_design("rn1-bidelta").build({"endpoints": endpoints, "seed": wiring})
        net = dut.net

        def heads(src, dest, fill):
            return [net.head(dest, fill)]
    else:
        dut = get_design("rn1-fat-tree-network").build({"stages": 1, "seed": wiring})
        # The flat form: the hierarchical one places Instances, which amaranth.sim cannot run.
        dut.hierarchy = False
        heads = dut.net.heads
    n = len(dut.i)
    traffic = traffic_for(n, heads)

    async def bench(ctx):
        fwd_in = [dut.i[k].fwd.as_value() for k in range(n)]
        bk_in = [dut.i[k].bk.as_value() for k in range(n)]
        fwd_out = [dut.o[k].fwd.as_value() for k in range(n)]
        bk_out = [dut.o[k].bk.as_value() for k in range(n)]
        while traffic.running:
            # Outputs as the model's o_fwd / i_bk of the cycle (sim/checks/rn1.py reads the
            # same way before it drives), then this cycle's inputs.
            i_fwd, o_bk = traffic.cycle([ctx.get(v) for v in fwd_out], [ctx.get(v) for v in bk_in])
            for k in range(n):
                ctx.set(fwd_in[k], i_fwd[k])
                ctx.set(bk_out[k], o_bk[k])
            await ctx.tick()

    simulate(dut, bench)
    return traffic


def leiserson_tree_trace(
    leaves: int, w: int, seed: int, frames: dict, length: int
) -> list[list[int]]:
    """Drive ``frames`` (``{(source leaf, wire): bits}``, all starting with ``start`` in
    cycle 0) into ``leiserson-tree`` of ``leaves`` and ``w`` (``start_lead`` 0, graph
    ``seed``) in amaranth.sim for ``length`` cycles; per cycle, every leaf's receive word and
    then ``root_o``, as they were before that cycle's edge."""
    from ...designs import get_design
    from ..testbench import simulate

    dut = get_design("leiserson-tree").build(
        {"leaves": leaves, "w": 0 if w == leaves else w, "seed": seed, "start_lead": 0}
    )
    seen: list[list[int]] = []

    async def bench(ctx):
        for t in range(length):
            # Outputs of cycle t (before its edge), then cycle t's inputs, as the checks do.
            seen.append([ctx.get(dut.recv[leaf]) for leaf in range(leaves)] + [ctx.get(dut.root_o)])
            ctx.set(dut.start, int(t == 0))
            for leaf in range(leaves):
                word = 0
                for (src, wire), bits in frames.items():
                    if src == leaf and t < len(bits):
                        word |= bits[t] << wire
                ctx.set(dut.send[leaf], word)
            await ctx.tick()

    simulate(dut, bench)
    return seen


def network_load_bench(design: str, params: dict, simulator: str, bench: dict, root=None):
    """Run :mod:`fattree.sim.benches.network_load` on the generated Verilog of ``design``
    with ``params`` (the networks of :mod:`fattree.sim.load_networks`); the runner's
    :class:`~fattree.sim.cocotb_runner.BenchResult`."""
    from ...designs import get_design
    from ..cocotb_runner import run_bench

    return run_bench(
        get_design(design),
        params,
        simulator,
        seed=1,
        bench=bench,
        root=root,
        bench_module="fattree.sim.benches.network_load",
    )
