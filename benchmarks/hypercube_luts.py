"""Where one hypercube node's LUTs go: each LUT of the mapped node charged to what it feeds.

``python benchmarks/hypercube_luts.py -p dim=4 -p procs=2`` synthesises one
:class:`~fattree.hdl.hypercube.HypercubeNode` with the ECP5 flow's script (``synth_ecp5``,
its default LUT mapping), reads the mapped netlist and follows every LUT (and wide-LUT
multiplexer, carry) forward to the flip-flops and outputs it feeds. Each of those is one
*part* of the node, named after the register or port it drives:

* ``links: data`` / ``links: header``: the outgoing links' data bits / valid, address and
  processor bits;
* ``buffer: data`` / ``buffer: header``: the buffer slots' next data / header bits;
* ``receive``, ``injection queues``, ``selects``, ``refer count``, ``other``.

A LUT that feeds one part only is that part's; a LUT that feeds several is the *decision*
(the priority logic every part waits for). The node's number ``addr`` is a free input.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

__all__ = ["lut_breakdown", "classify_bit", "main"]

#: Mapped cells that are combinational logic, with the ports they drive.
_LOGIC = {"LUT4": ("Z",), "PFUMX": ("Z",), "L6MUX21": ("Z",), "CCU2C": ("S0", "S1", "COUT")}
_LUT_WEIGHT = {"LUT4": 1, "CCU2C": 2}  # a CCU2C holds two LUT4


def classify_bit(name: str, link_data_lsb: int | None = None) -> str:
    """The node part a register or output bit named ``name`` (``signal[bit]``) belongs to."""
    base, _, rest = name.partition("[")
    bit = int(rest.rstrip("]")) if rest else 0
    header = link_data_lsb is not None and bit < link_data_lsb
    if base.startswith("link_out"):
        return "links: header" if header else "links: data"
    if base.startswith("buf") and not base.startswith("buffered"):
        return "buffer: header" if header else "buffer: data"
    if base.startswith(("rx_", "rx__")):
        return "receive"
    if base.startswith(("inj", "tx__")):
        return "injection queues"
    if base.startswith(("sel", "send", "wsel", "bsel", "dsel", "leave", "hold")):
        return "selects"
    if base.startswith("refer"):
        return "refer count"
    return "other"


def _sinks(module: dict, link_data_lsb: int) -> dict[int, str]:
    """Net bit -> part, for every flip-flop D input and every output port bit."""
    names: dict[int, str] = {}
    for name, net in module["netnames"].items():
        if net.get("hide_name"):
            continue
        for i, bit in enumerate(net["bits"]):
            if isinstance(bit, int):
                names.setdefault(bit, f"{name}[{i}]")
    sinks: dict[int, str] = {}
    for cell in module["cells"].values():
        if cell["type"].startswith("TRELLIS_FF"):
            q = cell["connections"]["Q"][0]
            d = cell["connections"]["DI"][0]
            if isinstance(d, int):
                sinks[d] = classify_bit(names.get(q, "other"), link_data_lsb)
    for name, port in module["ports"].items():
        if port["direction"] == "output":
            for i, bit in enumerate(port["bits"]):
                if isinstance(bit, int):
                    sinks[bit] = classify_bit(f"{name}[{i}]", link_data_lsb)
    return sinks


def lut_breakdown(netlist: dict, top: str, link_data_lsb: int) -> Counter:
    """LUT4 per part of the node (a CCU2C counts 2, a wide-LUT multiplexer 0)."""
    module = netlist["modules"][top]
    sinks = _sinks(module, link_data_lsb)
    readers: dict[int, list[str]] = {}
    for name, cell in module["cells"].items():
        for port, bits in cell["connections"].items():
            if cell["port_directions"].get(port) == "input":
                for bit in bits:
                    if isinstance(bit, int):
                        readers.setdefault(bit, []).append(name)
    cells = module["cells"]
    parts_of: dict[str, frozenset] = {}

    def reach(name: str, seen: set) -> frozenset:
        if name in parts_of:
            return parts_of[name]
        seen.add(name)
        cell = cells[name]
        found: set = set()
        for port in _LOGIC[cell["type"]]:
            for bit in cell["connections"].get(port, []):
                if not isinstance(bit, int):
                    continue
                if bit in sinks:
                    found.add(sinks[bit])
                for reader in readers.get(bit, []):
                    if cells[reader]["type"] in _LOGIC and reader not in seen:
                        found |= reach(reader, seen)
        parts_of[name] = frozenset(found)
        return parts_of[name]

    sys.setrecursionlimit(100_000)
    tally: Counter = Counter()
    for name, cell in cells.items():
        weight = _LUT_WEIGHT.get(cell["type"], 0)
        if not weight:
            continue
        parts = reach(name, set())
        part = next(iter(parts)) if len(parts) == 1 else "decision (shared)"
        tally[part] += weight
    return tally


def _synthesise(params: dict[str, int], out: Path) -> tuple[dict, int]:
    """Export and map one node; the netlist and the link layout's first data bit."""
    from amaranth.back import rtlil

    from fattree.hdl.hypercube import HypercubeNode
    from fattree.toolchain import require, setup_environment

    setup_environment()
    require("yosys")
    node = HypercubeNode(**params)
    out.mkdir(parents=True, exist_ok=True)
    (out / "node.il").write_text(rtlil.convert(node, name="node"))
    script = "read_rtlil node.il\nhierarchy -top node\nsynth_ecp5 -top node -json node.json\n"
    (out / "node.ys").write_text(script)
    yosys = [sys.executable, "-m", "fattree.synthesis.yosys_stack"]
    subprocess.run([*yosys, "-q", "-l", "yosys.log", "-s", "node.ys"], cwd=out, check=True)
    return json.loads((out / "node.json").read_text()), node.link["data"].offset


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--build-root", default="build/hypercube-luts")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    params = {"dim": 4, "procs": 2, "buffers": 2, "data_bits": 8}
    for item in args.param:
        key, _, value = item.partition("=")
        params[key] = int(value)
    out = Path(args.build_root) / "_".join(f"{k}{v}" for k, v in params.items())
    netlist, lsb = _synthesise(params, out)
    tally = lut_breakdown(netlist, "node", lsb)
    total = sum(tally.values())
    if args.json:
        print(json.dumps({"params": params, "lut4": total, "parts": dict(tally)}, indent=2))
        return 0
    print(f"HypercubeNode({params}): {total} LUT4 (ECP5, synth_ecp5)")
    for part, luts in tally.most_common():
        print(f"  {part:24} {luts:6}  {100 * luts / total:5.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
