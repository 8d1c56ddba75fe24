"""The Verilog a user gets passes ``verilator --lint-only -Wall`` without a warning, given the
waivers ``fattree verilog`` writes beside it; each waiver is still needed; and the rewrites
that make the text lint-clean (:mod:`fattree.verilog_output`) leave the circuit as it was.

The default run lints every design, the small ones at their defaults and the networks whose
default Verilog takes seconds to lint at a small point (the AXI4-Stream tops likewise), and a
few edge points; ``--run-slow`` adds every design's defaults and larger points.
"""

import re
import subprocess
from pathlib import Path

import pytest

from fattree import toolchain
from fattree import verilog_output as output
from fattree.designs import DESIGNS, elaborate_verilog, parse_params, top_name
from fattree.scripts.main import main
from fattree.verilog_output import WAIVERS, tidy, waiver_file


def lint(folder, text: str, top: str, waivers: bool = True) -> str:
    """What ``verilator --lint-only -Wall`` prints on ``text`` (with the waivers file before
    it, as README.md tells under "Lint"); empty when it is clean."""
    toolchain.require("verilator")
    folder.mkdir(parents=True, exist_ok=True)
    verilog = folder / f"{top}.v"
    verilog.write_text(text)
    files = [verilog]
    if waivers:
        vlt = output.waiver_path(verilog)
        vlt.write_text(waiver_file(verilog.name))
        files.insert(0, vlt)
    argv = ["verilator", "--lint-only", "-Wall", "-Wno-fatal", "--top-module", top, *files]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert result.returncode == 0 or "%Error" in result.stderr, result.stderr
    return result.stderr


def kinds(report: str) -> dict[str, int]:
    """``{"UNUSEDSIGNAL": 12, ...}``: the warnings (and errors) of a Verilator report."""
    found: dict[str, int] = {}
    for kind in re.findall(r"^%(?:Warning|Error)-?([A-Z0-9_]*)", report, re.M):
        found[kind or "ERROR"] = found.get(kind or "ERROR", 0) + 1
    return found


def point(design: str, *params: str, ports: str = "native", marks=()):
    return pytest.param(design, params, ports, id="-".join((design, ports, *params)), marks=marks)


slow = (pytest.mark.slow,)
BIG = ("rn1-unit-tree", "rn1-fat-tree", "rn1-fat-tree-network", "rn1-hybrid")
#: Networks whose defaults take 5 to 15 s to write and lint: a small point of each by default.
SMALL = {
    "circuit-tree-paper": ("leaves=4",),
    "circuit-tree": ("leaves=4",),
    "leiserson-tree": ("leaves=4",),
    "leiserson-stream": ("leaves=4",),
    "leiserson-online": ("leaves=4",),
    "rn1-bidelta": ("endpoints=4",),
    "rn1-bidelta-stream": ("endpoints=4",),
    "hypercube": ("dim=2",),
}

POINTS = [
    # Every design: at its defaults, or at a small point (above); DeHon's 64-node networks
    # (20 to 90 s each) by the one-stage hybrid (the same structural writer and shared router
    # modules).
    *(point(name, *SMALL.get(name, ())) for name in DESIGNS if name not in BIG),
    point("rn1-hybrid", "stages=1"),
    # The AXI4-Stream tops at small points.
    point("circuit-tree-paper", "leaves=4", ports="axis"),
    point("circuit-tree", "leaves=4", ports="axis"),
    point("scheduler", "levels=2", "w=2", ports="axis"),
    point("leiserson-stream", "leaves=4", ports="axis"),
    point("rn1-bidelta-stream", "endpoints=4", ports="axis"),
    # Edge points: one-bit fields, zero-width memory addresses, other modes.
    point("selector", "width=1"),
    point("circuit-tree", "leaves=4", "window=1"),
    point("circuit-tree-paper", "leaves=2", "width=1", "length=1", "retry=backoff"),
    point("scheduler", "memory=portable"),
    point("leiserson-stream", "leaves=2", "data_bits=1"),
    point("leiserson-online", "leaves=2", "data_bits=1", "queue=2"),
    point("rn1", "mode=runtime", "priority=round-robin"),
    point("rn1", "mode=alternate", "priority=round-robin"),
    point("rn1-bidelta-stream", "endpoints=4", "retry=backoff", "max_bytes=1"),
    point("hypercube", "dim=1", "procs=1", "buffers=0", "data_bits=1"),
    # --run-slow: the rest of the defaults, and larger points.
    *(point(name, marks=slow) for name in (*BIG, *SMALL)),
    *(point(name, ports="axis", marks=slow) for name, d in DESIGNS.items() if d.axis),
    point("circuit-tree", "leaves=64", marks=slow),
    point("circuit-tree-paper", "leaves=64", marks=slow),
    point("leiserson-tree", "leaves=64", marks=slow),
    point("scheduler", "levels=4", "w=8", marks=slow),
    point("rn1-bidelta", "endpoints=64", marks=slow),
    point("rn1-unit-tree", "width=8", marks=slow),
    point("hypercube", "dim=6", marks=slow),
]


@pytest.mark.parametrize("design, params, ports", POINTS)
def test_lint_clean_with_the_waivers(tmp_path, design, params, ports):
    d = DESIGNS[design]
    text = elaborate_verilog(d, parse_params(d, list(params)), None, ports)
    report = lint(tmp_path, text, top_name(d, ports))
    assert not kinds(report), report[:3000]


def test_every_waiver_is_needed(tmp_path):
    # Without the waivers file the scheduler reports every waived rule, and nothing else: a
    # waiver whose rule no longer fires would be dropped from WAIVERS.
    d = DESIGNS["scheduler"]
    text = elaborate_verilog(d, d.defaults())
    found = kinds(lint(tmp_path, text, top_name(d), waivers=False))
    assert set(found) == {w.rule for w in WAIVERS}, found


def test_cli_writes_the_waivers_beside_the_verilog(capsys, tmp_path):
    target = tmp_path / "out" / "sel.v"
    assert main(["verilog", "selector", "-o", str(target), "--json"]) == 0
    assert '"waivers": "' + str(tmp_path / "out" / "sel.vlt") in capsys.readouterr().out
    vlt = (tmp_path / "out" / "sel.vlt").read_text()
    assert vlt == waiver_file("sel.v") and vlt.startswith("`verilator_config\n")
    # One reason line before each waiver, and the waiver limited to the file.
    lines = vlt.splitlines()
    for waiver in WAIVERS:
        rule = f'lint_off -rule {waiver.rule} -file "*sel.v"'
        assert rule in lines and lines[lines.index(rule) - 1] == f"// {waiver.reason}"
    # Linted from elsewhere, by its own path, the file is clean.
    argv = ["verilator", "--lint-only", "-Wall", str(tmp_path / "out" / "sel.vlt"), str(target)]
    toolchain.require("verilator")
    result = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, check=False)
    assert result.returncode == 0 and "%Warning" not in result.stderr, result.stderr


def test_waiver_path():
    assert output.waiver_path(Path("a/b.v")) == Path("a/b.vlt")
    assert output.waiver_path(Path("b")) == Path("b.vlt")
    assert output.waiver_path(Path("b.vlt")) == Path("b.vlt.vlt")


# --- the rewrites, one by one -----------------------------------------------------------------

HEAD = """module m(clk, a, b, c, s, y, z);
  input clk;
  input [3:0] a;
  input b;
  input [7:0] c;
  input [1:0] s;
  output [3:0] y;
  wire [3:0] y;
  output z;
  wire z;
  wire [1:0] n, p;
  reg [7:0] mem [15:0];
"""


def tidied(*body: str) -> list[str]:
    """The lines of ``body`` tidied, in a module that declares the names they use."""
    lines = tidy(HEAD + "\n".join(body) + "\nendmodule\n")[len(HEAD) :].splitlines()
    return lines[: lines.index("endmodule")]


def test_comparison_operands_at_one_width():
    attr = '(* src = "x.py:1" *) '
    assert tidied(f"  assign z = a == {attr}1'h1;") == [f"  assign z = a == {attr}4'h1;"]
    assert tidied("  assign z = c[2:1] != 1'h0;") == ["  assign z = c[2:1] != 2'h0;"]
    assert tidied("  assign z = b < a;") == ["  assign z = { 3'h0, b } < a;"]
    assert tidied("  assign z = a > 2'bx1;") == ["  assign z = a > 4'b00x1;"]
    # A comparison's one-bit result does not widen its operands.
    assert tidied("  assign z = a == c[3:0];") == ["  assign z = a == c[3:0];"]


def test_arithmetic_at_the_width_of_its_result():
    assert tidied("  assign c = a + b;") == ["  assign c = { 4'h0, a } + { 7'h0, b };"]
    assert tidied("  assign y = a - 1'h1;") == ["  assign y = a - 4'h1;"]
    assert tidied("  assign y = b ? a : 2'h3;") == ["  assign y = b ? a : 4'h3;"]
    assert tidied("  assign y = { b, b };") == ["  assign y = { 2'h0, { b, b } };"]
    assert tidied("  assign c = { 2{ a } };") == ["  assign c = { 2{ a } };"]


def test_a_result_wider_than_its_net_keeps_its_high_bits_apart():
    assert tidied("  assign y = c >> s;") == [
        "  wire [3:0] \\$unused$1 ;",
        "  assign { \\$unused$1 , y } = c >> s;",
    ]
    # The shift amount keeps its own width; a narrower operand is widened.
    assert tidied("  assign c = 1'h1 << s;") == ["  assign c = 8'h01 << s;"]


def test_logical_not_of_several_bits_is_a_reduction():
    assert tidied("  assign z = ! a;") == ["  assign z = ~| a;"]
    assert tidied("  assign z = ! b;") == ["  assign z = ! b;"]
    assert tidied("  assign z = | a;") == ["  assign z = | a;"]


def test_lines_it_cannot_read_stay_as_they_are():
    for line in (
        "  assign z = $signed(a) < $signed(4'h3);",
        "  assign z = a == unknown;",
        "  assign y = mem[s];",
        "  assign y = a + b + b;",
    ):
        assert tidied(line) == [line]


def test_case_gets_an_empty_default():
    body = ["  always @*", "    casez (s)", "      2'h0:", "          /* empty */;", "    endcase"]
    assert tidied(*body) == [
        *body[:4],
        "      default:",
        "          /* empty */;",
        "    endcase",
    ]
    # Not where there is one, nor where the items are declared full.
    with_default = [*body[:4], "      default:", "          /* empty */;", "    endcase"]
    assert tidied(*with_default) == with_default
    full = [*body[:1], "    (* full_case = 32'd1 *)", *body[1:]]
    assert tidied(*full) == full


def test_zero_width_wires_nothing_names_are_dropped():
    lines = tidy(
        HEAD + '  (* src = "x" *)\n  wire [-1:0] \\p.wire ;\n  wire [-1:0] \\q ;\n'
        "  wire [-1:0] \\q$1 ;\n  assign \\q$1 = 0;\nendmodule\n"
    ).splitlines()
    assert not any("p.wire" in line or "\\q " in line for line in lines)
    assert "  wire [-1:0] \\q$1 ;" in lines and '  (* src = "x" *)' not in lines


def test_tidy_is_idempotent_and_leaves_text_outside_modules():
    d = DESIGNS["circuit-tree-paper"]
    text = elaborate_verilog(d, parse_params(d, ["leaves=4"]))
    assert tidy(text) == text
    assert tidy("/* x */\n") == "/* x */\n"


# --- the same circuit -------------------------------------------------------------------------

EQUIV = """read_verilog {gold}
hierarchy -top {top}
proc; flatten; memory; opt_clean
rename {top} gold
design -stash gold
read_verilog {gate}
hierarchy -top {top}
proc; flatten; memory; opt_clean
rename {top} gate
design -stash gate
design -copy-from gold -as gold gold
design -copy-from gate -as gate gate
equiv_make gold gate equiv
hierarchy -top equiv
equiv_simple -seq 2
equiv_induct -seq 2
equiv_status -assert
"""


def _assert_equivalent(tmp_path, gold: str, gate: str, top: str) -> None:
    """Yosys proves the two Verilog texts of design ``top`` equivalent, net for net."""
    (tmp_path / "gold.v").write_text(gold)
    (tmp_path / "gate.v").write_text(gate)
    (tmp_path / "equiv.ys").write_text(EQUIV.format(gold="gold.v", gate="gate.v", top=top))
    argv = [toolchain.TOOLS["yosys"].exe, "-q", "equiv.ys"]
    result = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.mark.synthesis
@pytest.mark.parametrize(
    "design, params, ports",
    [
        point("scheduler"),
        point("circuit-tree-paper", "leaves=4"),
        point("circuit-tree", "leaves=4", "window=1"),
        point("leiserson-stream", "leaves=4", ports="axis"),
        point("hypercube", "dim=1", "procs=2", marks=slow),
        point("rn1", "mode=alternate", "priority=round-robin", marks=slow),
        point("rn1", "mode=runtime", "priority=round-robin", marks=slow),
        point("hypercube", "dim=2", marks=slow),
    ],
)
def test_tidy_keeps_the_circuit(tmp_path, monkeypatch, design, params, ports):
    # Yosys proves the written Verilog equivalent to the generator's own text, net for net.
    toolchain.require("yosys")
    d = DESIGNS[design]
    values = parse_params(d, list(params))
    gate = elaborate_verilog(d, values, None, ports)
    monkeypatch.setattr(output, "tidy", lambda text: text)
    gold = elaborate_verilog(d, values, None, ports)
    assert gold != gate
    _assert_equivalent(tmp_path, gold, gate, top_name(d, ports))


@pytest.mark.synthesis
@pytest.mark.parametrize(
    "design, params, ports",
    [
        point("circuit-tree", "leaves=4", "window=1"),
        point("leiserson-tree", "leaves=4"),
        # Two nodes that list their ports in different orders (the node wired first).
        point("hypercube", "dim=1", "procs=2"),
        point("hypercube", "dim=2", marks=slow),
        point("leiserson-stream", "leaves=4", ports="axis", marks=slow),
    ],
)
def test_shared_modules_keep_the_circuit(tmp_path, monkeypatch, design, params, ports):
    # Yosys proves the Verilog with identical modules written once equivalent to the one
    # with every copy, net for net; and the copies are gone.
    import fattree.verilog_sharing as sharing

    toolchain.require("yosys")
    d = DESIGNS[design]
    values = parse_params(d, list(params))
    gate = elaborate_verilog(d, values, None, ports)
    monkeypatch.setattr(sharing, "share_modules", lambda text: text)
    gold = elaborate_verilog(d, values, None, ports)
    modules = [re.findall(r"^module ", text, re.M) for text in (gold, gate)]
    assert len(modules[1]) < len(modules[0])
    _assert_equivalent(tmp_path, gold, gate, top_name(d, ports))


def test_readme_lists_the_waivers():
    # The README's "Lint" section gives the count and each waiver with its reason.
    section = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = section.split("### Lint\n", 1)[1].split("\n## ", 1)[0]
    assert f"\n{len(WAIVERS)} waivers," in section
    rows = re.findall(r"^\| `([A-Z]+)` \| (.*) \|$", section, re.M)
    assert rows == [(w.rule, w.reason) for w in WAIVERS]
