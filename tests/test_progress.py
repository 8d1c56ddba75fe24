"""The progress display of long runs (scripts/common.progress_display).

Off a terminal (pipes, CI logs, pytest's capture) each step is one plain line on stderr, as
before the live display; --json and --quiet print nothing there; on a terminal a transient
status line shows the step, and finished steps stay printed with their time.
"""

import argparse
import io
import os
import re
import subprocess
import sys

import pytest
from rich.console import Console

from fattree.scripts import common
from fattree.scripts.common import progress_display
from fattree.scripts.main import main

EXPERIMENT = ["experiment", "collision-probability", "--sizes", "2..4", "--samples", "100"]
PLAIN = "".join(f"collision-probability: n = 2^{h}\n" for h in (2, 3, 4))
# Cursor moves, erase-line, colours, cursor show/hide: what a live display leaves behind.
CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=120), out


def test_plain_lines_off_a_terminal(capsys):
    assert main(EXPERIMENT) == 0
    out, err = capsys.readouterr()
    assert err == PLAIN
    assert "formula" in out


def test_plain_lines_keep_the_wrote_lines(capsys, tmp_path):
    csv_file = tmp_path / "t.csv"
    assert main([*EXPERIMENT, "--csv", str(csv_file)]) == 0
    assert capsys.readouterr().err == PLAIN + f"wrote {csv_file}\n"


@pytest.mark.parametrize("flag", ["--json", "--quiet"])
def test_json_and_quiet_are_silent(capsys, flag):
    assert main([*EXPERIMENT, flag]) == 0
    assert capsys.readouterr().err == ""


def test_plain_and_quiet_displays():
    with progress_display() as show:
        assert show.quiet is False
        show.total(3)  # no bar off a terminal, and no error
        show.advance()
    with progress_display(True) as show:
        show("nothing")
        show.total(2)
        show.advance(2)


def test_terminal_shows_steps_and_their_times():
    console, out = _terminal()
    with progress_display(console=console) as show:
        show("yosys synth_ice40: selector [x]")
        show.step("nextpnr-ice40")
    text = CONTROL.sub("", out.getvalue())
    # Finished steps stay printed (markup-like brackets in the text are kept as they are).
    assert re.search(r"\u2713 yosys synth_ice40: selector \[x\] \(\d+\.\d s\)", text)
    assert re.search(r"\u2713 nextpnr-ice40 \(\d+\.\d s\)", text)
    # The cursor is shown again and the transient status line erased (cursor up, erase line).
    assert out.getvalue().endswith("\x1b[?25h\r\x1b[1A\x1b[2K")


def test_terminal_bar_counts_steps():
    console, out = _terminal()
    with progress_display(console=console) as show:
        show.total(4)
        show("point 1")
        show.advance(2)
        show._live.refresh()  # draw now, rather than on the refresh thread's next tick
    text = CONTROL.sub("", out.getvalue())
    assert "2/4" in text
    assert "\u2713 point 1" in text


def test_terminal_experiment_through_the_command(capsys, monkeypatch):
    console, out = _terminal()
    monkeypatch.setattr(common, "_terminal_console", lambda: console)
    assert main(EXPERIMENT) == 0
    captured = capsys.readouterr()
    assert captured.err == ""  # everything went to the live display
    text = CONTROL.sub("", out.getvalue())
    for h in (2, 3, 4):
        assert f"\u2713 collision-probability: n = 2^{h} (" in text
    assert "formula" in captured.out  # the table is on stdout, outside the display


def test_a_pipe_is_not_a_terminal(tmp_path):
    # A real subprocess whose stderr is a pipe, even with FORCE_COLOR set as CI systems do.
    env = {**os.environ, "FORCE_COLOR": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "fattree", *EXPERIMENT],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr == PLAIN


def test_terminal_cuts_a_long_step_to_the_width():
    console, out = _terminal()
    console.width = 60
    with progress_display(console=console) as show:
        show("nextpnr " + "x" * 100)
        show._live.refresh()
    lines = CONTROL.sub("", out.getvalue()).replace("\r", "\n").splitlines()
    status = [line for line in lines if line.startswith("\u280b nextpnr")]
    assert status and all(len(line) <= 60 and "\u2026" in line for line in status)
    assert any(line.endswith("0:00:00") for line in map(str.rstrip, status))


def test_experiments_count_their_steps_for_the_bar():
    # An experiment tells a display with total/advance how many points it has and when each
    # is done; a plain callback (the tests', the JSON path's) keeps working.
    from fattree.sim.experiments import counted, registry

    class Display:
        def __init__(self):
            self.totals, self.advanced, self.steps = [], 0, []

        def __call__(self, text):
            self.steps.append(text)

        def total(self, n):
            self.totals.append(n)

        def advance(self, k=1):
            self.advanced += k

    show = Display()
    assert list(counted(show, "abc")) == ["a", "b", "c"]
    assert show.totals == [3] and show.advanced == 3
    assert list(counted(print, [1, 2])) == [1, 2]

    experiment = registry()["collision-probability"]
    parser = argparse.ArgumentParser()
    experiment.add_arguments(parser)
    show = Display()
    experiment.run(parser.parse_args(["--sizes", "2..4"]), show)
    assert show.totals == [3] and show.advanced == 3 and len(show.steps) >= 3
