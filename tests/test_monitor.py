"""``fattree monitor`` against a pseudo-terminal fed with the bytes a simulated self-test
board put on its UART (decoded from the serial line of the amaranth.sim run)."""

import json
import os
import threading
import time
import tty

import pytest

from fattree.boards.circuit_selftest import CircuitTreeHarness
from fattree.boards.selftest import SelfTestCore, simulate_status
from fattree.scripts.main import main

SMALL = {
    "leaves": 4,
    "width": 1,
    "length": 8,
    "seed": 1,
    "retry": "immediate",
    "inject_cycles": 150,
}


@pytest.fixture(scope="module")
def board_bytes():
    """What the simulated board sent, healthy and with a fault, as bytes off the wire."""
    out = {}
    for fault in (None, 7):
        core = SelfTestCore(CircuitTreeHarness(**SMALL), blink_log2=4, fault_log2=fault)
        result = simulate_status(core, 8000)
        out[fault] = result["text"].encode("ascii"), result["lines"]
    return out


@pytest.fixture
def pty_port():
    """A pseudo-terminal: (writer fd, the serial port path the monitor opens)."""
    master, slave = os.openpty()
    tty.setraw(slave)  # no echo, no CR/LF translation: a serial line
    yield master, os.ttyname(slave)
    os.close(master)
    os.close(slave)


def opened(path: str) -> int:
    """How many of this process's file descriptors are open on ``path``."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") == path
        except OSError:
            pass
    return count


def feed(fd, data, port, chunk=7):
    """Write in small pieces, as bytes trickle in from a UART, once the monitor (run in this
    process) has opened ``port`` and flushed it: opening the port discards what is waiting
    (pyserial flushes the input), so bytes written earlier would be lost on a slow machine."""

    def writer():
        deadline = time.monotonic() + 30
        while opened(port) < 2 and time.monotonic() < deadline:  # the fixture holds one
            time.sleep(0.02)
        time.sleep(0.3)
        for k in range(0, len(data), chunk):
            os.write(fd, data[k : k + chunk])

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    return thread


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_monitor_reads_simulated_board(capsys, pty_port, board_bytes):
    master, port = pty_port
    data, lines = board_bytes[None]
    assert len(lines) >= 3
    # The monitor may start in the middle of a line: that piece is skipped.
    thread = feed(master, b"ked 0000 errors 0000\r\n" + data, port)
    code, out, err = run_cli(capsys, "monitor", "--port", port, "--lines", "3", "--json")
    thread.join()
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [row["fields"] for row in rows] == lines[:3]
    assert all(row["errors"] == 0 for row in rows)
    assert rows[2]["checked"] > rows[1]["checked"] > 0
    # Messages per cycle between two lines, from the board's own cycle count.
    want = (lines[2]["checked"] - lines[1]["checked"]) / (lines[2]["cycles"] - lines[1]["cycles"])
    assert rows[2]["per_cycle"] == round(want, 4) and rows[0]["per_cycle"] is None


def test_monitor_table_and_fail_on_error(capsys, pty_port, board_bytes):
    master, port = pty_port
    data, lines = board_bytes[7]
    first_bad = next(k for k, line in enumerate(lines) if line["errors"])
    thread = feed(master, data, port)
    code, out, err = run_cli(capsys, "monitor", "--port", port, "--fail-on-error")
    thread.join()
    assert code == 1
    table = out.splitlines()
    assert table[0].split() == ["checked", "msgs/s", "msgs/cycle", "rejects", "maxlat", "errors"]
    assert len(table) == 1 + first_bad + 1  # stopped at the first line with errors
    assert table[-1].split()[-1] == str(lines[first_bad]["errors"])
    assert err.startswith("fattree monitor: error reported: ")


def test_monitor_errors(capsys, tmp_path, pty_port):
    code, out, err = run_cli(capsys, "monitor", "--port", str(tmp_path / "ttyNOPE"))
    assert code == 1 and out == ""
    assert err.strip().splitlines() == [
        f"fattree monitor: error: cannot open serial port {tmp_path / 'ttyNOPE'}: "
        "No such file or directory"
    ]
    _, port = pty_port
    code, _, err = run_cli(capsys, "monitor", "--port", port, "--timeout", "0.5", "--json")
    assert code == 1
    assert (
        err.strip() == f"fattree monitor: error: no status line on {port} for 0.5 s (0 lines read)"
    )
