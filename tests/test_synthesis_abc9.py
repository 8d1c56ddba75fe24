"""The synthesis flow's retry with ``abc`` when YoWASP's Yosys stops inside ABC9."""

import sys

import pytest

from fattree.designs import get_design
from fattree.synthesis import (
    FAMILIES,
    SynthError,
    _run,
    _synth_commands,
    _yosys_script,
    failed_in_abc9,
    synthesise,
)

# The end of the log of `fattree synth circuit-tree-paper --param leaves=64 --family ecp5`, where
# Yosys exited with status 1 and no message.
ABC9_LOG = """\
3.45. Executing TECHMAP pass (map to technology primitives).

3.45.1. Executing Verilog-2005 frontend: /share/lattice/latches_map.v
Successfully finished Verilog frontend.

3.45.2. Continuing TECHMAP pass.
No more expansions possible.

3.46. Executing ABC9 pass.

3.46.1. Executing ABC9_OPS pass (helper functions for ABC9).

3.46.2. Executing ABC9_OPS pass (helper functions for ABC9).

3.46.3. Executing SCC pass (detecting logic loops).
"""


def test_failed_in_abc9_inside_a_nested_pass():
    assert failed_in_abc9(ABC9_LOG)


def test_failed_in_abc9_header_itself():
    assert failed_in_abc9(ABC9_LOG.split("3.46.1.")[0])


def test_not_failed_in_abc9_before_it_or_after_it():
    assert not failed_in_abc9(ABC9_LOG.split("3.46. Executing")[0])
    after = ABC9_LOG + "\n3.47. Executing TECHMAP pass (map to technology primitives).\n"
    assert not failed_in_abc9(after)
    # A later top-level section that merely mentions ABC9 in its text does not count.
    assert not failed_in_abc9(after + "\n4. Executing STAT pass.\n")
    assert not failed_in_abc9("")


@pytest.mark.parametrize("family", ["ice40", "ecp5"])
def test_abc_script_replaces_only_map_luts(family):
    fam = FAMILIES[family]
    assert _synth_commands(fam, "top", abc9=True) == [f"{fam.synth} -top top"]
    commands = _synth_commands(fam, "top", abc9=False, json_out="top.json")
    assert commands[0] == f"{fam.synth} -top top -run :map_luts"
    assert commands[-1] == f"{fam.synth} -top top -json top.json -run map_cells:"
    assert any(c.startswith("abc ") for c in commands[1:-1])
    assert not any("abc9" in c for c in commands)
    script = _yosys_script(fam, "top", abc9=False)
    # Both netlists (core and harness) are mapped the same way.
    assert script.count("-run :map_luts") == 2 and script.count("-run map_cells:") == 2


def test_trap_without_error_line_names_its_last_words(tmp_path):
    script = "import sys; print('Error: call stack exhausted', file=sys.stderr); sys.exit(1)"
    log = tmp_path / "yosys.log"
    with pytest.raises(SynthError) as info:
        _run([sys.executable, "-c", script], tmp_path, "yosys", log)
    assert str(info.value) == (
        f"yosys failed: exit status 1: Error: call stack exhausted (log: {log})"
    )


def _failing_first_yosys(monkeypatch, log_text):
    """Make the first Yosys run fail as if it had stopped where ``log_text`` ends."""
    # The flow calls the `_run` of its own module.
    import fattree.synthesis.flow as synthesis

    real = synthesis._run
    calls = []

    def fake(argv, cwd, tool, log):
        calls.append(argv[-1])
        if tool == "yosys" and len(calls) == 1:
            log.write_text(log_text)
            raise SynthError(f"yosys failed: exit status 1 (log: {log})")
        return real(argv, cwd, tool, log)

    monkeypatch.setattr(synthesis, "_run", fake)
    return calls


@pytest.mark.synthesis
def test_retry_with_abc_after_abc9_fails(monkeypatch, tmp_path):
    calls = _failing_first_yosys(monkeypatch, ABC9_LOG)
    result = synthesise(get_design("selector"), {"width": 4}, "ecp5", root=tmp_path)
    # The second Yosys run used the abc script, and the result says so.
    assert calls[:2] == ["synth.ys", "synth_abc.ys"]
    assert result.synth_script == "synth_ecp5, abc instead of abc9"
    assert result.abc9_error == f"yosys failed: exit status 1 (log: {result.directory}/yosys.log)"
    assert result.files["yosys_script"].name == "synth_abc.ys"
    assert result.files["yosys_abc9_log"].read_text() == ABC9_LOG
    data = result.as_dict()
    assert data["synth_script"] == result.synth_script and data["abc9_error"]
    # The same selector as with ABC9: every register kept, LUTs mapped, placed and timed.
    assert result.core.ffs == 5 * 4 + 2 and result.core.luts > 0
    assert result.timing is not None and result.timing.fmax_mhz > 0


@pytest.mark.synthesis
def test_other_yosys_failures_are_not_retried(monkeypatch, tmp_path):
    calls = _failing_first_yosys(monkeypatch, ABC9_LOG.split("3.46. Executing")[0])
    with pytest.raises(SynthError, match="exit status 1"):
        synthesise(get_design("selector"), {"width": 4}, "ecp5", root=tmp_path)
    assert calls == ["synth.ys"]
