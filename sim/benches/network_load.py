"""cocotb measurement of any network with stream endpoints under load, on the RTL.

Run by ``fattree experiment noc-compare`` through ``run_bench(..., bench_module=...)``. The
bench settings name the network (``network``, ``nodes``, ``length``: a
:class:`fattree.sim.load_networks.LoadNetwork`, whose payload fields the ports are packed
with) and what to run, each from a reset of the whole network:

* ``zero_load``: ``{"pairs": [[src, dest], ...], "gap": cycles}``, one
  :class:`fattree.sim.network_load.ZeroLoad` (the zero-load latency);
* ``points``: a list of :class:`fattree.sim.network_load.Point` fields, each driven by a
  :class:`fattree.sim.network_load.NetworkLoad`, the same driver the model runs use, so the
  same draws and inputs.

The summary holds each run's figures (``zero_load``, ``points``) and the cycles per second.
This bench measures the RTL only: that its figures equal the model's is what the experiment
shows and ``tests/test_noc_compare.py`` asserts. Inputs are driven and outputs sampled on the
falling clock edge, as in the other benches.
"""

from __future__ import annotations

import time

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.cocotb_runner import (
    ChangedInputs,
    bench_config,
    clock_and_reset,
    reset,
    write_summary,
)
from fattree.sim.load_networks import LoadNetwork, load_network
from fattree.sim.network_load import NetworkLoad, Point, ZeroLoad
from fattree.spec.bits import pack_fields, unpack_fields


class StreamPorts:
    """The flattened Verilog streams of every endpoint: ``tx__3__valid``, ``tx__3__ready``,
    ``tx__3__payload`` and ``rx__3__valid``, ``rx__3__ready``, ``rx__3__payload``, packed
    with the network's ``tx`` and ``rx`` fields (a beat without ``last`` is a whole
    message)."""

    def __init__(self, dut, net: LoadNetwork):
        self.net = net

        def ports(fmt):
            return [getattr(dut, fmt.format(k)) for k in range(net.nodes)]

        self.tx_valid, self.tx_payload = ports("tx__{}__valid"), ports("tx__{}__payload")
        self.tx_ready, self.rx_ready = ports("tx__{}__ready"), ports("rx__{}__ready")
        self.rx_valid, self.rx_payload = ports("rx__{}__valid"), ports("rx__{}__payload")
        self.writer = ChangedInputs((self.tx_valid, self.tx_payload, self.rx_ready))

    def drive(self, tx, ready) -> None:
        fields, dest = self.net.tx_fields, self.net.dest_field
        payload = []
        for beat in tx:
            if beat is None:
                payload.append(0)
                continue
            values = {dest: beat[0], "data": beat[1]}
            if "last" in fields:
                values["last"] = beat[2]
            payload.append(pack_fields(fields, **values))
        self.writer.write(([int(b is not None) for b in tx], payload, ready))

    def sample(self):
        tx_ready = [int(h.value) for h in self.tx_ready]
        rx = []
        for valid, payload in zip(self.rx_valid, self.rx_payload, strict=True):
            if not int(valid.value):
                rx.append(None)
                continue
            fields = unpack_fields(self.net.rx_fields, int(payload.value))
            rx.append((fields["data"], fields.get("last", 1)))
        return tx_ready, rx

    def idle(self) -> None:
        n = self.net.nodes
        self.drive([None] * n, [1] * n)


async def _drive(dut, ports: StreamPorts, run: NetworkLoad) -> int:
    """One run from reset to its end; the cycles it took."""
    while not run.finished:
        seen = ports.sample()
        tx, ready = run.inputs()
        ports.drive(tx, ready)
        run.observe(*seen)
        await FallingEdge(dut.clk)
    return run.cycle


@cocotb.test()
async def load_points(dut):
    config = bench_config()
    knobs = config["bench"]
    net = load_network(
        knobs["network"], knobs["nodes"], knobs["length"], knobs.get("retry", "immediate")
    )
    ports = StreamPorts(dut, net)
    ports.idle()
    await clock_and_reset(dut)
    cycles, fresh = 0, True
    started = time.perf_counter()
    summary: dict = {"points": []}
    zero = knobs.get("zero_load")
    if zero:
        run = ZeroLoad(net.nodes, net.word_bits, net.beats, zero["pairs"], zero["gap"])
        cycles += await _drive(dut, ports, run)
        summary["zero_load"] = run.figures()
        fresh = False
    for fields in knobs.get("points", []):
        if not fresh:
            ports.idle()
            await reset(dut)
        fresh = False
        run = NetworkLoad(net.nodes, net.word_bits, net.beats, Point(**fields))
        cycles += await _drive(dut, ports, run)
        summary["points"].append({"point": fields, "figures": run.figures()})
    seconds = time.perf_counter() - started
    delivered = sum(p["figures"]["delivered"] for p in summary["points"])
    write_summary(
        config,
        {
            "cycles": cycles,
            "checked": delivered,
            "unit": "messages delivered in the windows",
            "mismatches": 0,
            "first_mismatch": None,
            **summary,
            "seconds": round(seconds, 3),
            "cycles_per_second": round(cycles / seconds, 1) if seconds else None,
        },
    )
