"""AXI4-Stream tops of the RN1 networks with endpoints (hdl/rn1/axis.py): the port names a
Verilog user sees, and the cocotbext-axi bench (sim/benches/rn1_stream_axis.py) against
the reference model, with a broken reference caught."""

from __future__ import annotations

import re
import shutil

import pytest

from fattree.designs import get_design
from fattree.scripts.main import main

_ICARUS = pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog")


def _ports(verilog: str, top: str) -> dict[str, tuple[str, int]]:
    body = verilog[verilog.index(f"module {top}(") :]
    body = body[: body.index("endmodule")]
    found = re.findall(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?(\w+);", body, re.M)
    return {name: (d, int(msb) + 1 if msb else 1) for d, msb, name in found}


def test_axis_port_names(capsys):
    argv = ["verilog", "rn1-bidelta-stream", "-p", "endpoints=4", "--ports", "axis", "-o", "-"]
    assert main(argv) == 0
    ports = _ports(capsys.readouterr().out, "rn1_bidelta_stream_axis")
    want = {"aclk": ("input", 1), "aresetn": ("input", 1)}
    for k in range(4):
        s, m = f"s_axis_{k}_", f"m_axis_{k}_"
        want |= {
            s + "tdata": ("input", 8),
            s + "tvalid": ("input", 1),
            s + "tready": ("output", 1),
            s + "tdest": ("input", 2),
            s + "tlast": ("input", 1),
            m + "tdata": ("output", 8),
            m + "tvalid": ("output", 1),
            m + "tready": ("input", 1),
            m + "tlast": ("output", 1),
        }
        for counter in ("sent", "retries", "received", "dropped", "timeouts"):
            want[f"{counter}_{k}"] = ("output", 16)
    assert {k: v for k, v in ports.items() if k in want} == want
    # Every port is an AXI one or a counter: nothing of the native names left.
    assert ports == want


def test_the_wrapper_checks_parameters_as_the_network():
    from fattree.hdl.rn1.axis import rn1_bidelta_stream_axis

    with pytest.raises(ValueError, match="max_bytes"):
        rn1_bidelta_stream_axis(endpoints=4, max_bytes=0)
    with pytest.raises(ValueError, match="retry"):
        rn1_bidelta_stream_axis(endpoints=4, retry="later")


def test_both_rn1_endpoint_designs_have_an_axis_top():
    for name, module in (
        ("rn1-bidelta-stream", "rn1_bidelta_stream_axis"),
        ("rn1-fat-tree", "rn1_fat_tree_axis"),
    ):
        top = get_design(name).top("axis")
        assert top.component == f"fattree.hdl.rn1.axis:{module}"
        assert top.bench == "fattree.sim.benches.rn1_stream_axis"


def _bench(root, retry, **bench):
    from fattree.sim.cocotb_runner import run_bench

    design = get_design("rn1-bidelta-stream")
    params = {**design.defaults(), "endpoints": 4, "max_bytes": 4, "retry": retry}
    return run_bench(
        design, params, "icarus", seed=3, bench=bench, root=root, ports="axis"
    ).as_dict()


@pytest.mark.cocotb
@_ICARUS
@pytest.mark.parametrize(
    "retry", ["immediate", *(pytest.param(r, marks=pytest.mark.slow) for r in ("round", "backoff"))]
)
def test_cocotbext_axi_bench_passes(tmp_path, retry):
    result = _bench(tmp_path, retry, frames=120)
    s = result["summary"]
    assert result["passed"], s
    assert s["message_mismatches"] == 0 and s["counter_mismatches"] == 0
    # The traffic did what it is for: frames both ways, some dropped, some retried.
    assert s["frames_received"] == s["frames_sent"] >= 120
    assert s["frames_dropped"] > 0 and s["retries"] > 0


@pytest.mark.cocotb
@_ICARUS
def test_cocotbext_axi_bench_catches_a_broken_reference(tmp_path):
    result = _bench(tmp_path, "immediate", frames=40, mutation=True)
    assert not result["passed"]
    assert result["summary"]["message_mismatches"] >= 1


def test_fat_tree_axis_ports(built_but_unused):
    """The 64-node fat-tree's AXI4-Stream top has the same ports per node (built, not
    elaborated: its Verilog takes minutes)."""
    from amaranth.lib.wiring import In, Out

    from fattree.hdl.rn1.axis import rn1_fat_tree_axis

    top = rn1_fat_tree_axis(seed=1, retry="round", max_bytes=4)
    members = top.signature.members
    assert top.n == 64
    assert members["s_axis_63_tdest"] == In(6) and members["m_axis_0_tlast"] == Out(1)
    assert members["timeouts_63"] == Out(16) and members["m_axis_63_tready"] == In(1)
    assert len(members) == 2 + 64 * (9 + 5)
