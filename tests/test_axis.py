"""The AXI4-Stream top (``--ports axis``, hdl/axis.py, docs/axis.md): its Verilog ports, the
one-line errors, and its cocotbext-axi bench on Verilator and Icarus."""

import re
import shutil

import pytest

from fattree.designs import get_design
from fattree.scripts.main import main

_ICARUS = pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def ports_of(verilog: str, top: str) -> dict[str, tuple[str, int]]:
    """``{name: (direction, width)}`` of the top module's ports."""
    body = verilog[verilog.index(f"module {top}(") :]
    body = body[: body.index("endmodule")]
    ports = {}
    for direction, msb, name in re.findall(
        r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?(\w+);", body, re.M
    ):
        ports[name] = (direction, int(msb) + 1 if msb else 1)
    return ports


def expected_ports(leaves: int, width: int) -> dict[str, tuple[str, int]]:
    h = leaves.bit_length() - 1
    want = {"aclk": ("input", 1), "aresetn": ("input", 1)}
    for k in range(leaves):
        want |= {
            f"s_axis_{k}_tdata": ("input", width),
            f"s_axis_{k}_tvalid": ("input", 1),
            f"s_axis_{k}_tready": ("output", 1),
            f"s_axis_{k}_tdest": ("input", h),
            f"s_axis_{k}_tlast": ("input", 1),
            f"m_axis_{k}_tdata": ("output", width),
            f"m_axis_{k}_tvalid": ("output", 1),
            f"m_axis_{k}_tready": ("input", 1),
            f"m_axis_{k}_tlast": ("output", 1),
            f"dropped_{k}": ("output", 16),
        }
    return want


@pytest.mark.parametrize("leaves, width", [(4, 8), (8, 5)])
def test_verilog_ports(capsys, leaves, width):
    code, out, err = run(
        capsys,
        "verilog",
        "circuit-tree-paper",
        "--ports",
        "axis",
        "-p",
        f"leaves={leaves}",
        "-p",
        f"width={width}",
        "-o",
        "-",
    )
    assert code == 0, err
    # Exactly the AXI4-Stream ports, nothing of the native top (clk, rst, tx__0__valid ...).
    assert ports_of(out, "circuit_tree_paper_axis") == expected_ports(leaves, width)


def test_verilog_native_is_the_default(capsys):
    code, out, _ = run(capsys, "verilog", "circuit-tree-paper", "-p", "leaves=2", "-o", "-")
    assert code == 0
    ports = ports_of(out, "circuit_tree_paper")
    assert "clk" in ports and "tx__0__valid" in ports and "s_axis_0_tdata" not in ports


def test_verilog_writes_axis_file(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(
        capsys, "verilog", "circuit-tree-paper", "--ports", "axis", "-p", "leaves=2", "--json"
    )
    assert code == 0
    assert out.count('"ports": "axis"') == 1
    path = tmp_path / "build/verilog/circuit-tree-paper/leaves2-length2-retryimmediate-seed1-width8"
    assert "module circuit_tree_paper_axis(" in (path / "circuit-tree-paper-axis.v").read_text()


NO_AXIS = (
    "design selector has no AXI-Stream top yet (--ports axis); "
    "designs with one: circuit-tree-paper, circuit-tree, scheduler, leiserson-stream, "
    "rn1-bidelta-stream, rn1-fat-tree"
)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["verilog", "selector", "--ports", "axis"], f"fattree verilog: error: {NO_AXIS}"),
        (["sim", "selector", "--ports", "axis"], f"fattree sim: error: {NO_AXIS}"),
        (
            ["sim", "circuit-tree-paper", "--ports", "axis", "-p", "faults=eject:1"],
            "fattree sim: error: --ports axis runs the fault-free tree; simulate a fault list "
            "with the native ports (fattree sim circuit-tree-paper --param faults=...)",
        ),
    ],
)
def test_one_line_errors(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [message]


def test_bad_ports_choice(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["verilog", "circuit-tree-paper", "--ports", "axi"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'axi'" in capsys.readouterr().err


def test_design_top():
    design = get_design("circuit-tree-paper")
    assert design.top("native") is None
    assert design.top("axis").bench == "fattree.sim.benches.circuit_tree_axis"
    with pytest.raises(ValueError, match=re.escape(NO_AXIS)):
        get_design("selector").top("axis")
    with pytest.raises(ValueError, match=r"^ports must be one of native, axis, not 'x'$"):
        design.top("x")


def test_wrapper_checks_parameters_as_the_tree():
    from fattree.hdl.axis import CircuitTreeAxis

    with pytest.raises(ValueError, match="leaves"):
        CircuitTreeAxis(leaves=3)
    with pytest.raises(ValueError, match="length"):
        CircuitTreeAxis(leaves=4, length=0)


# -- the cocotbext-axi bench --------------------------------------------------------------------


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    # One build folder per simulator and size, shared by the passing and the mutated run.
    return tmp_path_factory.mktemp("axis")


def bench(root, simulator, leaves, *, width=8, length=2, frames=None, mutation=False):
    from fattree.sim.cocotb_runner import run_bench

    params = {"leaves": leaves, "width": width, "length": length, "seed": 1, "retry": "immediate"}
    return run_bench(
        get_design("circuit-tree-paper"),
        params,
        simulator,
        seed=2,
        bench={"frames": frames or 4 * leaves, "mutation": mutation},
        root=root,
        ports="axis",
    )


def check_passed(result, leaves):
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["mismatches"] == 0 and s["first_mismatch"] is None
    assert s["message_mismatches"] == 0 and s["dropped_mismatches"] == 0
    assert s["messages_checked"] == s["frames_sent"] == s["frames_received"] > 4 * leaves
    assert s["malformed_frames"] > 0 and s["backpressure"] == 30


def check_caught(result):
    s = result.summary
    assert not result.passed and result.failed == 1
    assert s["mismatches"] == 1 and s["message_mismatches"] == 1
    assert s["first_mismatch"].startswith("frames received at leaf 0: frame 0 (sorted)")


@pytest.mark.cocotb
@pytest.mark.parametrize(
    "simulator, leaves",
    [
        pytest.param("verilator", 4, marks=pytest.mark.slow),
        pytest.param("verilator", 8, marks=pytest.mark.slow),
        pytest.param("icarus", 4, marks=_ICARUS),
        pytest.param("icarus", 8, marks=[_ICARUS, pytest.mark.slow]),
    ],
)
def test_bench_passes_and_broken_model_is_caught(root, simulator, leaves):
    check_passed(bench(root, simulator, leaves), leaves)
    check_caught(bench(root, simulator, leaves, mutation=True))


@pytest.mark.cocotb
@_ICARUS
@pytest.mark.parametrize("width, length", [(5, 3), (8, 1)])
def test_bench_odd_width_and_one_word(root, width, length):
    # tdata not a multiple of 8 bits (cocotbext-axi with byte_lanes=1), and frames of one beat.
    check_passed(bench(root, "icarus", 4, width=width, length=length), 4)


@pytest.mark.cocotb
@_ICARUS
def test_fast_tree_bench_passes_and_broken_model_is_caught(root):
    # The fast circuit tree behind the same AXI4-Stream top and bench.
    from fattree.sim.cocotb_runner import run_bench

    params = {"leaves": 4, "width": 8, "length": 2, "seed": 1, "window": 4}
    for mutation, check in ((False, lambda r: check_passed(r, 4)), (True, check_caught)):
        knobs = {"frames": 16, "mutation": mutation}
        design = get_design("circuit-tree")
        check(run_bench(design, params, "icarus", seed=2, bench=knobs, root=root, ports="axis"))
