"""RN1 networks as a hierarchy of shared Verilog modules: one module per router mode and one
for the swallow element, written once, and a top that places them as instances.

Why: Amaranth 0.5 writes every elaborated component as a module of its own, so a network of
``R`` routers is ``R`` copies of the router's logic in the export (one stage of DeHon's
fat-tree, 52 routers: 69.8 MB of RTLIL, 34 s and 0.9 GB; two stages, 4160 routers, would not
fit this machine). The routers of a network differ only in their mode and their LFSR seed (the
reset value of the LFSR register), so :func:`router_module` exports the router once per mode
with the seed as a 16-bit input port ``seed``, loaded into the LFSR at reset, and
:func:`network_modules` gives the modules a network uses; :func:`wire_network` with
``hierarchy=True`` (:mod:`fattree.hdl.rn1.network`) places ``Instance`` s of them in an
Amaranth design, and :func:`network_verilog` writes the top of a whole network as structural
Verilog from the link list. Why both: Amaranth numbers a top module's input bits in 16 bits
(at most 65 536), and two unit-tree stages have 8704 channels, 156 672 input bits; the
written top has no such limit.

The seed becomes a port by editing the exported text, checked as it goes: the router is
exported with two different seeds, and the two texts must differ exactly in the occurrences
of the seed's constant, two of them (the LFSR register's initial value and its reset value),
both in the LFSR module; anything else raises. The initial value is dropped, so the LFSR
holds its seed from the first reset on (every bench resets first; Amaranth's platforms add a
power-on reset). The hierarchical and the flat network are the same routers and wires; the
benches check the hierarchical one against the models (:mod:`fattree.sim.checks.rn1`).
"""

from __future__ import annotations

import functools
import re

from ...spec.rn1 import CHANNELS, LFSR_WIDTH, WORD_BITS, check_mode

__all__ = [
    "router_module",
    "swallow_module",
    "network_modules",
    "with_shared_modules",
    "network_verilog",
    "check_fits",
    "MODULES",
]

#: Verilog module names: the router by mode, the swallow element.
MODULES = {
    "primary": "rn1_router_primary",
    "alternate": "rn1_router_alternate",
    "swallow": "rn1_swallow",
}

#: LUT4 of one router alone by mode, ``synth_ecp5`` (docs/dehon.md, "Synthesis"), and of the
#: largest ECP5 the flow targets (LFE5U-85F).
ROUTER_ECP5_LUT4 = {"primary": 1377, "alternate": 811}
LARGEST_LUT4 = 83_640

# Two seeds whose constants cannot be mistaken for anything else in the export (checked).
_PROBES = (0x5A3C, 0x3CA5)


def _const(seed: int) -> str:
    return f"{LFSR_WIDTH}'h{seed:04x}"


def _export(component, name: str) -> str:
    # The Yosys it runs is the caller's setting (fattree.toolchain, which hdl/ may not import).
    from amaranth.back import verilog

    return verilog.convert(component, name=name, emit_src=False)


class ExportShapeError(RuntimeError):
    """The router's Verilog is not in the shape the seed port is cut into (an Amaranth or
    Yosys version that writes it otherwise): said in one line, never a wrong module."""


def _seed_port(text: str, other: str, name: str) -> str:
    a, b = (_const(s) for s in _PROBES)
    if text.count(a) != 2 or b in text or text.replace(a, b) != other:
        raise ExportShapeError(
            f"{name}: the exports with seeds {a} and {b} differ elsewhere than in the two "
            "seed constants of the LFSR register"
        )
    lfsr = f"\\{name}.lfsr"
    header = re.compile(r"^module " + re.escape(lfsr) + r" \(([^;]*)\);$", re.M)
    match = header.search(text)
    if match is None or text.find(a) < match.end():
        raise ExportShapeError(f"{name}: the seed constants are not in module {lfsr}")
    width = f"[{LFSR_WIDTH - 1}:0]"
    decl = f"  input {width} seed;\n  wire {width} seed;\n"
    text = header.sub(lambda m: f"module {lfsr} ({m.group(1)}, seed);\n{decl}", text, count=1)
    # The initial value (``reg [15:0] value = 16'h....;``) and the reset value (``... =
    # 16'h....;`` under ``if (rst)``), in that order.
    init = re.compile(r"^(  reg " + re.escape(width) + r" [^=;]+) = " + re.escape(a) + ";$", re.M)
    text, n_init = init.subn(r"\1;", text)
    text, n_reset = re.subn(r"= " + re.escape(a) + ";", "= seed;", text)
    instance = re.compile(r"^(  " + re.escape(lfsr) + r" +\S+ \()$", re.M)
    text, n_inst = instance.subn(r"\1\n    .seed(seed),", text)
    top = re.compile(r"^module " + re.escape(name) + r"\(([^;]*)\);$", re.M | re.S)
    text, n_top = top.subn(lambda m: f"module {name}({m.group(1)}, seed);\n{decl}", text, count=1)
    if (n_init, n_reset, n_inst, n_top) != (1, 1, 1, 1):
        raise ExportShapeError(
            f"{name}: seed port not cut in (initial value {n_init}, reset {n_reset}, "
            f"instance {n_inst}, ports {n_top}; each should be 1)"
        )
    return text


@functools.cache
def router_module(mode: str) -> str:
    """Verilog of :class:`fattree.hdl.rn1.router.RN1Router` in ``mode``, module
    ``MODULES[mode]``; the primary router takes its LFSR seed from the input ``seed`` at
    reset (the alternate mode has no LFSR and no ``seed``)."""
    from .router import RN1Router

    mode = check_mode(mode)
    name = MODULES[mode]
    text, other = (_export(RN1Router(mode, s), name) for s in _PROBES)
    if mode == "alternate":
        if text != other:
            raise ExportShapeError(f"{name}: the alternate router's export depends on its seed")
        return text
    return _seed_port(text, other, name)


@functools.cache
def swallow_module() -> str:
    """Verilog of :class:`fattree.hdl.rn1.swallow.RN1Swallow`, module ``rn1_swallow``."""
    from .swallow import RN1Swallow

    return _export(RN1Swallow(), MODULES["swallow"])


def network_modules(routers: dict, swallows=()) -> str:
    """The modules a network of ``routers`` (``key -> (mode, seed)``) and ``swallows``
    places: each used router mode once, and the swallow if there is one."""
    modes = sorted({mode for mode, _ in routers.values()})
    parts = [router_module(mode) for mode in modes]
    if swallows:
        parts.append(swallow_module())
    return "\n".join(parts)


def with_shared_modules(text: str) -> str:
    """Verilog ``text`` with the shared modules it instantiates but does not define appended
    (an Amaranth export of a design holding a network in its hierarchical form)."""
    makers = {
        MODULES["primary"]: lambda: router_module("primary"),
        MODULES["alternate"]: lambda: router_module("alternate"),
        MODULES["swallow"]: swallow_module,
    }
    defined = set(re.findall(r"^module\s+(\S+?)\s*\(", text, re.M))
    used = [
        name
        for name in makers
        if name not in defined and re.search(rf"^\s*{name}\s", text, re.M) is not None
    ]
    return "\n".join([text, *(makers[name]() for name in used)]) if used else text


def _ports(side: str, port, single: bool) -> tuple[str, str]:
    """Verilog port names of channel ``port`` of an element's ``side`` (``i`` or ``o``), as
    Amaranth flattens them: ``i__3__fwd`` (a router's arrays), ``i__fwd`` (a swallow's)."""
    stem = f"{side}__" if single else f"{side}__{port}__"
    return stem + "fwd", stem + "bk"


def network_verilog(name: str, routers: dict, links, inputs, outputs, swallows=()) -> str:
    """Structural Verilog of the network of ``routers`` (``key -> (mode, seed)``),
    ``swallows`` and ``links`` (the lists :func:`fattree.hdl.rn1.network.wire_network`
    takes), module ``name``, ports as Amaranth writes an ``RN1Router``'s: ``i__c__fwd`` in
    and ``i__c__bk`` out for input channel ``c``, ``o__c__fwd`` out and ``o__c__bk`` in, then
    ``clk`` and ``rst``. Each link is a pair of wires; an element input no link drives is 0,
    as an undriven Amaranth signal is; the modules come from :func:`network_modules`."""
    w, zero = f"[{WORD_BITS - 1}:0]", f"{WORD_BITS}'h000"
    n = len(inputs)
    if len(outputs) != n:
        raise ValueError(f"{n} input channels but {len(outputs)} output channels")
    in_index = {end: c for c, end in enumerate(inputs)}
    out_index = {end: c for c, end in enumerate(outputs)}
    # One channel's ports a line: Verilator refuses lines of more than 40 000 tokens.
    names = [f"  i__{c}__fwd, i__{c}__bk, o__{c}__fwd, o__{c}__bk," for c in range(n)]
    lines = [f"module {name}(", *names, "  clk, rst);", "  input clk;", "  input rst;"]
    for c in range(n):
        lines += [
            f"  input {w} i__{c}__fwd;",
            f"  output {w} i__{c}__bk;",
            f"  output {w} o__{c}__fwd;",
            f"  input {w} o__{c}__bk;",
        ]
    swallow_keys = set(swallows)
    # (element key, "i" | "o", port) -> (forward wire, backward wire)
    conn: dict[tuple, tuple[str, str]] = {}
    driven_out, driven_bk = set(), set()
    for k, (src, dst) in enumerate(links):
        f, b = f"f{k}", f"b{k}"
        lines.append(f"  wire {w} {f}, {b};")
        if src[0] == "out":
            conn[src[1:-1], "o", src[-1]] = (f, b)
        elif src[0] == "in":
            raise ValueError(f"link {k} starts at an input end {src!r}")
        else:
            c = in_index[src]
            lines += [f"  assign {f} = i__{c}__fwd;", f"  assign i__{c}__bk = {b};"]
            driven_bk.add(c)
        if dst[0] == "in":
            conn[dst[1:-1], "i", dst[-1]] = (f, b)
        elif dst[0] == "out":
            raise ValueError(f"link {k} ends at an output end {dst!r}")
        else:
            c = out_index[dst]
            lines += [f"  assign o__{c}__fwd = {f};", f"  assign {b} = o__{c}__bk;"]
            driven_out.add(c)
    for c in range(n):
        if c not in driven_bk:
            lines.append(f"  assign i__{c}__bk = {zero};")
        if c not in driven_out:
            lines.append(f"  assign o__{c}__fwd = {zero};")

    def place(key, module, ports, seed):
        single = key in swallow_keys
        pins = [".clk(clk)", ".rst(rst)"]
        for side in ("i", "o"):
            for p in range(ports):
                fwd, bk = _ports(side, p, single)
                f, b = conn.get((key, side, p), (None, None))
                # Into an element: i's fwd and o's bk (0 when no link drives them); out of it
                # the other two (left open when no link reads them).
                f = f or (zero if side == "i" else "")
                b = b or (zero if side == "o" else "")
                pins += [f".{fwd}({f})", f".{bk}({b})"]
        if seed is not None:
            pins.append(f".seed({_const(seed)})")
        label = "_".join(str(k) for k in key)
        lines.append(f"  {module} {'' if single else 'r_'}{label} (" + ", ".join(pins) + ");")

    for key, (mode, seed) in routers.items():
        place(key, MODULES[mode], CHANNELS, seed if mode == "primary" else None)
    for key in swallows:
        place(key, MODULES["swallow"], 1, None)
    lines.append("endmodule")
    return "\n".join(lines) + "\n"


def check_fits(what: str, routers: dict) -> None:
    """Synthesis reads Amaranth's RTLIL, which has no shared modules, so a hierarchical
    network is synthesised flat; one of more than twice the largest ECP5's LUT4 by the single
    routers' figures (flat, Yosys optimises across routers: 52 came to about half that) is
    refused here, in one line, before an export that would not fit this machine either."""
    need = sum(ROUTER_ECP5_LUT4[mode] for mode, _ in routers.values())
    if need > 2 * LARGEST_LUT4:
        raise ValueError(
            f"{what} does not fit: {len(routers)} RN1 need about {need} LUT4 by the single "
            f"routers' ECP5 figures ({ROUTER_ECP5_LUT4['primary']} primary, "
            f"{ROUTER_ECP5_LUT4['alternate']} alternate); the LFE5U-85F has {LARGEST_LUT4}"
        )
