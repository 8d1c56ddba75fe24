"""The generic AXI4-Stream top (``StreamAxis``, hdl/axis.py) of the designs whose edges are
streams: the scheduler and the Leiserson stream tree. Their Verilog ports, and their
cocotbext-axi benches (order for order against the scheduler's reference; per delivery cycle,
every message once at its destination)."""

import re
import shutil

import pytest

from fattree.designs import elaborate_verilog, get_design
from fattree.spec.capacities import TreeLayout
from fattree.spec.leiserson_frames import header_bits_bound
from fattree.spec.scheduler import request_fields, result_fields

_ICARUS = pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog")


def ports_of(verilog: str, top: str) -> dict[str, tuple[str, int]]:
    body = verilog[verilog.index(f"module {top}(") :]
    body = body[: body.index("endmodule")]
    return {
        name: (direction, int(msb) + 1 if msb else 1)
        for direction, msb, name in re.findall(
            r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?(\w+);", body, re.M
        )
    }


def whole_bytes(bits: int) -> int:
    return -(-bits // 8) * 8


def bits(fields) -> int:
    """Payload bits of the scheduler's field list (an array field is (bits, count))."""
    return sum(b[0] * b[1] if isinstance(b, tuple) else b for _, b in fields)


def test_scheduler_axis_ports():
    verilog = elaborate_verilog(get_design("scheduler"), {"levels": 3, "w": 4}, ports="axis")
    req, res = bits(request_fields(3, 4)), bits(result_fields(3, 4))
    assert ports_of(verilog, "scheduler_axis") == {
        "aclk": ("input", 1),
        "aresetn": ("input", 1),
        "s_axis_requests_tdata": ("input", whole_bytes(req)),
        "s_axis_requests_tvalid": ("input", 1),
        "s_axis_requests_tready": ("output", 1),
        "m_axis_results_tdata": ("output", whole_bytes(res)),
        "m_axis_results_tvalid": ("output", 1),
        "m_axis_results_tready": ("input", 1),
    }


def test_leiserson_stream_axis_ports():
    params = {"leaves": 4, "w": 0, "seed": 0, "data_bits": 8}
    verilog = elaborate_verilog(get_design("leiserson-stream"), params, ports="axis")
    ports = ports_of(verilog, "leiserson_stream_axis")
    h = header_bits_bound(TreeLayout.universal(4))
    tx = whole_bytes(h + h.bit_length() + 8)
    want = {"aclk": ("input", 1), "aresetn": ("input", 1)}
    for k in range(4):  # the per-leaf streams tx[k], rx[k] take the leaf's number alone
        want |= {
            f"s_axis_{k}_tdata": ("input", tx),
            f"s_axis_{k}_tvalid": ("input", 1),
            f"s_axis_{k}_tready": ("output", 1),
            f"m_axis_{k}_tdata": ("output", 8),  # one wire per leaf: data only
            f"m_axis_{k}_tvalid": ("output", 1),
            f"m_axis_{k}_tready": ("input", 1),
        }
    want |= {"cycle_valid": ("input", 1), "cycle_ready": ("output", 1)}
    assert ports == want


def bench(tmp_path, design, params, simulator, *, mutation=False, frames=20):
    from fattree.sim.cocotb_runner import run_bench

    return run_bench(
        get_design(design),
        params,
        simulator,
        seed=3,
        bench={"frames": frames, "mutation": mutation},
        root=tmp_path,
        ports="axis",
    )


SCHEDULER = {"levels": 3, "w": 4, "memory": "auto"}
LEISERSON = {"leaves": 8, "w": 0, "seed": 0, "data_bits": 8}
#: The default run's point: 4 leaves (8 leaves on Verilator is a slow point).
LEISERSON_SMALL = {**LEISERSON, "leaves": 4}


@pytest.mark.cocotb
@_ICARUS
def test_scheduler_axis_bench_passes_and_broken_model_is_caught(tmp_path):
    result = bench(tmp_path, "scheduler", SCHEDULER, "icarus", frames=10)
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["results_checked"] == s["commands"] > 200 and s["double_grants"] == 0
    assert s["granted"] > 0
    broken = bench(tmp_path, "scheduler", SCHEDULER, "icarus", frames=2, mutation=True)
    assert not broken.passed and broken.summary["mismatches"] == 1


@pytest.mark.cocotb
@_ICARUS
def test_leiserson_stream_axis_bench_passes_and_broken_model_is_caught(tmp_path):
    result = bench(tmp_path, "leiserson-stream", LEISERSON_SMALL, "icarus")
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["delivery_cycles"] == 20 and s["messages_checked"] > 20
    broken = bench(tmp_path, "leiserson-stream", LEISERSON_SMALL, "icarus", frames=3, mutation=True)
    assert not broken.passed and broken.summary["mismatches"] == 1


@pytest.mark.cocotb
@pytest.mark.slow
@pytest.mark.parametrize(
    "design, params", [("scheduler", SCHEDULER), ("leiserson-stream", LEISERSON)]
)
def test_axis_benches_on_verilator(tmp_path, design, params):
    result = bench(tmp_path, design, params, "verilator", frames=60)
    assert result.passed, result.summary.get("first_mismatch") or result.log
