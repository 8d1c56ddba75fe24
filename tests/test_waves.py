"""Timing diagrams from RTL traces (fattree wave): the trace says what the docs say."""

import json

import pytest

from fattree.scripts.main import main
from fattree.waves import DIAGRAMS, Trace, render_svg, trace, wavejson


def ones(values):
    return [cycle for cycle, v in enumerate(values) if v]


def test_circuit_tree_reject_trace_has_the_documented_timing(tmp_path):
    rows = trace("circuit-tree-paper-reject", tmp_path).rows
    # docs/circuit_tree.md, "A receiver that is not ready: the interface rejects".
    assert ones(rows["tx_done[0]"]) == [11, 26]
    assert ones(rows["eject reject"]) == [16]
    assert ones(rows["tx_reject[0]"]) == [18]
    assert ones(rows["rx[1].ready"])[0] == 19
    assert rows["rx[1].data"][9] == 0x21 and rows["rx[1].data"][24] == 0x43
    valid = rows["rx[1].valid"]
    assert ones(valid) == list(range(9, 20)) + [24]  # 0x21 held until taken at 19


def test_circuit_tree_drop_trace_has_the_documented_timing(tmp_path):
    rows = trace("circuit-tree-drop", tmp_path).rows
    # docs/circuit_tree_fast.md, "Timing": node 0's head turns and is granted; node 2's, at
    # the same down port in the same cycle, is dropped, never acknowledged, and sent again.
    assert ones(rows["inject2 head"]) == [3, 12] and ones(rows["inject0 head"]) == [5]
    assert ones(rows["eject1 head"]) == [6, 15] and ones(rows["eject1 ack"]) == [7, 16]
    assert ones(rows["inject0 ack"]) == [12] and ones(rows["tx_done[0]"]) == [13]
    assert ones(rows["inject2 ack"]) == [19] and ones(rows["tx_done[2]"]) == [20]
    assert ones(rows["tx_reject[2]"]) == [11] and not any(rows["tx_reject[0]"])
    assert [rows["rx[1].data"][c] for c in ones(rows["rx[1].valid"])] == [0x21, 0x65]


def test_leiserson_stream_trace_holds_the_next_cycle_for_the_receiver(tmp_path):
    rows = trace("leiserson-stream-cycle", tmp_path).rows
    start = ones(rows["start"])
    assert start == [ones(rows["cycle_valid"])[0] + 1]
    taken = [c for c in ones(rows["rx[3].valid"]) if rows["rx[3].ready"][c]]
    assert taken and rows["rx[3].data"][taken[0]] == 0xA5
    # cycle_ready returns the cycle after the held message is taken, not when the cycle ends.
    back = [c for c in ones(rows["cycle_ready"]) if c > start[0]][0]
    assert back == taken[0] + 1 > start[0] + 24


def test_wavejson_levels_buses_and_repeats():
    source = wavejson(Trace("t", {"v": [0, 1, 1, 0], "d": [0, 5, 5, 7]}, buses={"d"}))
    signal = {row["name"]: row for row in source["signal"]}
    assert signal["clk"]["wave"] == "p..."
    assert signal["v"]["wave"] == "01.0"
    assert signal["d"]["wave"] == "x=.=" and signal["d"]["data"] == ["5", "7"]
    assert render_svg(source).lstrip().startswith("<svg")


def test_cli_wave(tmp_path, capsys):
    out = tmp_path / "w.json"
    assert (
        main(
            [
                "wave",
                "circuit-tree-paper-reject",
                "--wavejson",
                "-o",
                str(out),
                "--build-root",
                str(tmp_path),
            ]
        )
        == 0
    )
    assert json.loads(out.read_text())["signal"][0]["name"] == "clk"
    assert main(["wave", "--list"]) == 0
    assert set(DIAGRAMS) <= set(capsys.readouterr().out.replace(":", " ").split())
    assert main(["wave", "circuit-tree-paper-reject", "-o", str(tmp_path / "w.png")]) == 2
    assert "-o must name a .svg file" in capsys.readouterr().err


def test_unknown_signal_is_one_line(tmp_path):
    from fattree.waves import read_vcd

    trace("circuit-tree-paper-reject", tmp_path)
    with pytest.raises(KeyError, match="no signal 'bench.top.nope'"):
        read_vcd(
            tmp_path / "circuit-tree-paper-reject.vcd", {"x": "bench.top.nope"}, "bench.top.clk"
        )
