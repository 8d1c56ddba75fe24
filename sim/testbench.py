"""Run amaranth.sim testbenches on a design: the four lines every unit test would repeat."""

from __future__ import annotations

__all__ = ["simulate", "merge_steps"]


def simulate(
    dut, *testbenches, processes=(), period: float | None = 1e-6, vcd: str | None = None
) -> None:
    """Simulate ``dut`` with a clock of ``period`` seconds (None: no clock) until every
    testbench returns; ``processes`` are added with ``add_process`` (they may run forever).
    With ``vcd``, every signal of the design is traced to that file."""
    from amaranth.sim import Simulator

    sim = Simulator(dut)
    if period is not None:
        sim.add_clock(period)
    for process in processes:
        sim.add_process(process)
    for bench in testbenches:
        sim.add_testbench(bench)
    if vcd is None:
        sim.run()
        return
    with sim.write_vcd(vcd):
        sim.run()


def merge_steps(*streams: list[dict]) -> list[dict]:
    """Directed stimulus: merge per-cycle steps (``{input: {port: value}}``; ``"rst"`` holds a
    plain value) of several streams into one, as long as the longest."""
    total = max(len(s) for s in streams)
    out = [{} for _ in range(total)]
    for s in streams:
        for k, step in enumerate(s):
            for key, value in step.items():
                if key == "rst":
                    out[k]["rst"] = value
                else:
                    out[k].setdefault(key, {}).update(value)
    return out
