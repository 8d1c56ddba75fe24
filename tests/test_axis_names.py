"""One naming rule for every AXI4-Stream top (docs/axis.md, "Port names").

Every design of the record (fattree/designs.py) with an AXI top is walked: its signature at
the defaults and at its small point, and its Verilog at the small point, port by port against
the rule; the sideband ports allowed are exactly those docs/axis.md lists. A new design with
an AXI top is held to the rule without touching this file.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from fattree.designs import DESIGNS, elaborate_verilog, top_name

DOCS = Path(__file__).resolve().parents[1] / "docs" / "axis.md"

AXIS_TOPS = [name for name, design in DESIGNS.items() if design.axis]

#: Designs whose Verilog costs too much for the default run, and why.
SLOW_VERILOG = {"rn1-fat-tree": "64 endpoints at any parameters: a minute of Verilog"}

#: ``s_axis_<k>_t*`` (``k`` a leaf) or ``s_axis_<name>_t*`` (``name``: words of lower-case
#: letters and digits, each starting with a letter, so no leaf number hides in it).
STREAM_PORT = re.compile(
    r"(?P<side>[sm])_axis_(?P<stream>\d+|[a-z][a-z0-9]*(?:_[a-z][a-z0-9]*)*)"
    r"_(?P<signal>tdata|tvalid|tready|tlast|tdest|tid|tkeep|tstrb|tuser)"
)
REQUIRED = {"tdata", "tvalid", "tready"}


def documented_sideband() -> dict[str, str]:
    """``{name: direction}`` of the rows of docs/axis.md's sideband table (``<k>``: per leaf)."""
    text = DOCS.read_text()
    section = text[text.index("### Sideband ports") :]
    section = section[: section.index("\n\n", section.index("|"))]
    rows = re.findall(r"^\| `([a-z_<>]+)` \| (in|out) \|", section, re.M)
    assert rows, "docs/axis.md has no sideband table"
    return dict(rows)


def violations(ports: dict[str, str], sideband: dict[str, str]) -> list[str]:
    """Every way ``ports`` (``{name: "in" | "out"}``) breaks the rule; empty if none."""
    found = []
    for name, want in (("aclk", "in"), ("aresetn", "in")):
        if ports.get(name) != want:
            found.append(f"{name}: missing or not an input")
    streams: dict[tuple[str, str], set[str]] = {}
    leaf_sideband: dict[str, set[int]] = {}
    for name, direction in ports.items():
        if name in ("aclk", "aresetn"):
            continue
        match = STREAM_PORT.fullmatch(name)
        if match:
            side, signal = match["side"], match["signal"]
            streams.setdefault((side, match["stream"]), set()).add(signal)
            want = "in" if (side == "s") != (signal == "tready") else "out"
            if direction != want:
                found.append(f"{name}: {direction}put, the rule says {want}put")
            continue
        per_leaf = re.fullmatch(r"([a-z][a-z0-9_]*?)_(\d+)", name)
        key = f"{per_leaf[1]}_<k>" if per_leaf else name
        if key not in sideband:
            found.append(f"{name}: neither an AXI stream port nor a documented sideband port")
        elif direction != sideband[key]:
            found.append(f"{name}: {direction}put, docs/axis.md says {sideband[key]}put")
        elif per_leaf:
            leaf_sideband.setdefault(per_leaf[1], set()).add(int(per_leaf[2]))
    for (side, name), signals in sorted(streams.items()):
        if not REQUIRED <= signals:
            missing = ", ".join(sorted(REQUIRED - signals))
            found.append(f"{side}_axis_{name}: no {missing}")
    leaves = {side: {int(n) for s, n in streams if s == side and n.isdigit()} for side in "sm"}
    every = set(range(max(leaves["s"] | leaves["m"], default=-1) + 1))
    for side in "sm":
        if leaves[side] != every:
            missing = ", ".join(map(str, sorted(every - leaves[side])))
            found.append(f"{side}_axis_<k>: no stream for leaf {missing}")
    for base, ks in sorted(leaf_sideband.items()):
        if ks != every:
            found.append(f"{base}_<k>: leaves {sorted(ks)}, streams for leaves 0..{len(every) - 1}")
    return found


def signature_ports(component: wiring.Component) -> dict[str, tuple[str, int]]:
    """``{name: (direction, width)}`` of the top's ports as Verilog names them (a member's
    path joined by ``__``)."""
    return {
        "__".join(map(str, path)): ("in" if member.flow == In else "out", len(value))
        for path, member, value in component.signature.flatten(component)
    }


def verilog_ports(verilog: str, top: str) -> dict[str, tuple[str, int]]:
    body = verilog[verilog.index(f"module {top}(") :]
    body = body[: body.index("endmodule")]
    found = re.findall(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?(\w+);", body, re.M)
    return {name: (d.removesuffix("put"), int(msb) + 1 if msb else 1) for d, msb, name in found}


def small_point(name: str) -> dict:
    design = DESIGNS[name]
    return {**design.defaults(), **(design.mutant_point or {})}


def directions(ports: dict[str, tuple[str, int]]) -> dict[str, str]:
    return {name: direction for name, (direction, _) in ports.items()}


def test_docs_list_every_axis_top_of_the_record():
    # docs/axis.md's table per design: exactly the record's AXI tops, with their module names.
    listed = re.findall(r"^\| `([a-z0-9-]+)` \| `([a-z0-9_]+)` \|", DOCS.read_text(), re.M)
    assert sorted(AXIS_TOPS) == sorted(name for name, _ in listed)
    for name, top in listed:
        assert top == top_name(DESIGNS[name], "axis")


@pytest.mark.parametrize("point", ["defaults", "small"])
@pytest.mark.parametrize("name", AXIS_TOPS)
def test_signature_follows_the_rule(name, point, built_but_unused):
    design = DESIGNS[name]
    params = design.defaults() if point == "defaults" else small_point(name)
    ports = signature_ports(design.build(params, "axis"))
    assert violations(directions(ports), documented_sideband()) == []


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_VERILOG else n for n in AXIS_TOPS],
)
def test_verilog_follows_the_rule(name, built_but_unused):
    design = DESIGNS[name]
    component_ports = signature_ports(design.build(small_point(name), "axis"))
    verilog = elaborate_verilog(design, small_point(name), ports="axis")
    ports = verilog_ports(verilog, top_name(design, "axis"))
    assert ports == component_ports  # the names users see are the signature's
    assert violations(directions(ports), documented_sideband()) == []


def test_the_rule_catches_each_kind_of_break():
    sideband = documented_sideband()
    good = {
        "aclk": "in",
        "aresetn": "in",
        "s_axis_0_tdata": "in",
        "s_axis_0_tvalid": "in",
        "s_axis_0_tready": "out",
        "m_axis_0_tdata": "out",
        "m_axis_0_tvalid": "out",
        "m_axis_0_tready": "in",
        "s_axis_requests_tdata": "in",
        "s_axis_requests_tvalid": "in",
        "s_axis_requests_tready": "out",
        "dropped_0": "out",
        "cycle_valid": "in",
    }
    assert violations(good, sideband) == []
    bad = {
        **{k: v for k, v in good.items() if k != "aresetn"},
        "clk": "in",  # not AXI's clock name
        "s_axis_tx_1_tdata": "in",  # a leaf number behind a stream name
        "s_axis_tx_1_tvalid": "in",
        "s_axis_tx_1_tready": "out",
        "m_axis_0_tlast": "in",  # a master's tlast is an output
        "s_axis_2_tdata": "in",  # leaf 2 without tvalid/tready, leaf 1 absent, no m_axis_2
        "dropped_0": "in",  # the docs say out
        "undocumented_0": "out",
    }
    assert sorted(violations(bad, sideband)) == sorted(
        [
            "aresetn: missing or not an input",
            "m_axis_0_tlast: input, the rule says output",
            "dropped_0: input, docs/axis.md says output",
            "clk: neither an AXI stream port nor a documented sideband port",
            "s_axis_tx_1_tdata: neither an AXI stream port nor a documented sideband port",
            "s_axis_tx_1_tvalid: neither an AXI stream port nor a documented sideband port",
            "s_axis_tx_1_tready: neither an AXI stream port nor a documented sideband port",
            "undocumented_0: neither an AXI stream port nor a documented sideband port",
            "s_axis_2: no tready, tvalid",
            "s_axis_<k>: no stream for leaf 1",
            "m_axis_<k>: no stream for leaf 1, 2",
        ]
    )


class _TwoArraysIn(wiring.Component):
    def __init__(self):
        s = stream.Signature(8)
        super().__init__({"a": In(s).array(2), "b": In(s).array(2), "c": Out(s).array(2)})

    def elaborate(self, platform):
        raise AssertionError("never elaborated")


def test_stream_axis_refuses_two_per_leaf_streams_one_way(built_but_unused):
    from fattree.hdl.axis import StreamAxis

    with pytest.raises(TypeError) as error:
        StreamAxis(_TwoArraysIn())
    assert str(error.value) == (
        "_TwoArraysIn has two stream arrays into it, a and b: only one can be the per-leaf stream"
    )
