"""``fattree experiment noc-compare``: every network with stream endpoints under the same
open-loop load, RTL and model, with its synthesis figures.

The generic driver gives the circuit tree's own load figures; the zero-load latency is the
sum of the paths' shortest times; the synthesis files of the three kinds are read; the payload
rates follow from their definition (the BFT reference reproduces its quoted figure); the RTL
of every network gives the model's figures at a small point; bad options are one-line errors.
"""

import json
import shutil

import pytest

from fattree.scripts.main import main
from fattree.sim.circuit_load import OpenLoop, min_latency
from fattree.sim.experiments.noc_compare import (
    REFERENCES,
    load_synthesis,
    payload_rates,
    synthesis_of,
    zero_load_pairs,
)
from fattree.sim.load_networks import NETWORKS, lengths_of, load_network
from fattree.sim.network_load import NetworkLoad, Point, ZeroLoad


def _drive(model, run):
    while not run.finished:
        tx, ready = run.inputs()
        run.observe(*model.cycle(tx, ready))
    return run.figures()


@pytest.mark.parametrize("pattern", ["random", "hotspot"])
def test_generic_driver_gives_the_circuit_trees_load_figures(pattern):
    """The same point through the circuit tree's own driver and through the generic one."""
    point = Point(pattern, 0.2, 50, 400, seed=3, stall=0.2)
    net = load_network("circuit-tree-paper", 8, 2)
    generic = _drive(net.model(), NetworkLoad(8, net.word_bits, net.beats, point))
    from fattree.sim.models.circuit import CircuitTreeModel

    model = CircuitTreeModel(8, 8, 2, 1, "immediate")
    own = OpenLoop(8, 8, 2, point)
    while not own.finished:
        valid, dest, data, ready = own.inputs()
        out = model.step(valid, dest, data, ready)
        own.observe(out.tx_ready, out.rx_valid, out.rx_data)
    assert generic == own.figures()
    assert generic["delivered"] > 0


def test_zero_load_is_the_mean_of_the_shortest_paths():
    nodes, length = 8, 2
    net = load_network("circuit-tree-paper", nodes, length)
    pairs = zero_load_pairs(nodes, 1)
    assert len(pairs) == nodes * (nodes - 1)
    got = _drive(net.model(), ZeroLoad(nodes, net.word_bits, net.beats, pairs, gap=64))
    # The turn level of a pair: the highest address bit where source and destination differ.
    want = [min_latency(nodes, length, (s ^ d).bit_length() - 1) for s, d in pairs]
    assert got["messages"] == len(pairs)
    assert got["mean"] == round(sum(want) / len(want), 3)
    assert (got["min"], got["max"]) == (min(want), max(want))


def test_zero_load_refuses_a_message_that_never_arrives():
    net = load_network("circuit-tree-paper", 4, 1)

    class Deaf:
        def cycle(self, tx, ready):
            return [0] * 4, [None] * 4

    with pytest.raises(RuntimeError, match="not delivered"):
        _drive(Deaf(), ZeroLoad(4, net.word_bits, net.beats, [(0, 1)], limit=50))


def test_frames_carry_one_byte_per_beat():
    """An RN1 message of 3 words is 3 byte beats, word 0 first, ``last`` on the third."""
    net = load_network("rn1-bidelta-stream", 4, 3)
    assert (net.beats, net.word_bits, net.payload_bits) == (3, 8, 24)
    run = NetworkLoad(4, 8, 3, Point("transpose", 1.0, 0, 10))
    tx, _ = run.inputs()
    beats = []
    for _ in range(3):
        beats.append(tx[1])
        run.observe([0, 1, 0, 0], [None] * 4)
        tx, _ = run.inputs()
    data = run.flight and next(iter(run.flight))
    assert [b[2] for b in beats] == [0, 0, 1] and data
    dest, value = data
    assert [b[0] for b in beats] == [dest] * 3
    assert sum(b[1] << (8 * k) for k, b in enumerate(beats)) == value


def test_sizes_and_lengths_are_checked():
    with pytest.raises(ValueError, match="built for 64 endpoints, not 16"):
        load_network("rn1-fat-tree", 16, 2)
    with pytest.raises(ValueError, match="1..8 words, not 9"):
        load_network("hypercube", 16, 9)
    with pytest.raises(ValueError, match="network must be one of"):
        load_network("bft", 16, 1)
    assert lengths_of("hypercube", [1, 2, 8, 32]) == [1, 2, 8]
    assert set(NETWORKS) >= {"circuit-tree-paper", "hypercube", "rn1-bidelta-stream"}


def test_payload_rates_follow_their_definition():
    # 16 endpoints x 0.558 packets x 8 bits x 112.1 MHz / 7.04 kLUT: the BFT3 figure.
    bft3 = REFERENCES[0]
    synth = {"luts": bft3["luts"], "fmax": bft3["fmax"]}
    per_node, per_klut = payload_rates(16, 8, bft3["random"], synth)
    assert per_node == round(0.558 * 8 * 112.1 / 1000, 3)
    assert per_klut == pytest.approx(1.14, abs=0.005)
    assert payload_rates(16, 8, None, synth) == (None, None)
    assert payload_rates(16, 8, 0.5, {"luts": 100, "fmax": None}) == (None, None)


def _sweep_json(fmaxes):
    runs = [
        {
            "job": {
                "kind": "synth",
                "name": "circuit-tree-paper",
                "params": [["leaves", 8], ["width", 8], ["length", 2], ["seed", 1], ["retry", 0]],
                "seed": seed,
                "family": "ecp5",
            },
            "result": {"resources": {"luts": 2000, "ffs": 900}, "fmax_mhz": fmax},
        }
        for seed, fmax in enumerate(fmaxes, 1)
    ]
    return {"columns": [], "rows": [], "runs": runs}


def test_synthesis_files_of_each_kind(tmp_path):
    net = load_network("circuit-tree-paper", 8, 2)
    sweep = tmp_path / "sweep.json"
    sweep.write_text(json.dumps(_sweep_json([150.0, 170.0, 160.0])))
    got = synthesis_of(net, load_synthesis(sweep))
    # retry 0 is "immediate"; the median over the seeds
    assert got == {"luts": 2000, "ffs": 900, "fmax": 160.0, "seeds": [1, 2, 3]}
    one = tmp_path / "one.json"
    one.write_text(
        json.dumps(
            {
                "design": "circuit-tree-paper",
                "family": "ecp5",
                "params": {"leaves": 8, "width": 8, "length": 2, "seed": 1, "retry": 0},
                "resources": {"luts": 2100, "ffs": 950},
                "fmax_mhz": 155.5,
                "seed": 2,
            }
        )
    )
    assert synthesis_of(net, load_synthesis(one))["fmax"] == 155.5
    assert synthesis_of(load_network("circuit-tree-paper", 8, 1), load_synthesis(one)) is None
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a synthesis JSON file"):
        load_synthesis(bad)


def test_packaged_synthesis_figures_are_readable():
    """The shipped records give the fast tree's figures at 16 leaves, 2 words: one netlist
    (LUT4, FF) and the median Fmax of nextpnr seeds 1-3."""
    figures = synthesis_of(load_network("circuit-tree", 16, 2), load_synthesis())
    assert figures == {"luts": 7716, "ffs": 4872, "fmax": 115.7, "seeds": [1, 2, 3]}


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--networks", "bft"], "--networks wants a comma list"),
        (["--nodes", "12"], "built for"),
        (["--lengths", "0"], "--lengths"),
        (["--fractions", "0.5,2"], "--fractions must be"),
        (["--patterns", "zigzag"], "--patterns wants"),
        (["--synth", "/nonexistent.json"], "cannot read /nonexistent.json"),
        (["--retry", "twice"], "retry must be one of immediate, round, backoff"),
    ],
)
def test_bad_options_are_one_line_errors(capsys, argv, message):
    code, out, err = run(capsys, "experiment", "noc-compare", "--model-only", *argv)
    assert code != 0 and message in err and len(err.strip().splitlines()) == 1


def test_model_only_table_and_plot(capsys, tmp_path):
    plot = tmp_path / "noc.png"
    argv = ["--model-only", "--nodes", "4", "--lengths", "1,2", "--cycles", "200"]
    argv += ["--warmup", "20", "--fractions", "0.5,1", "--patterns", "random,transpose"]
    argv += ["--networks", "circuit-tree-paper,hypercube", "--json", "--plot", str(plot)]
    code, out, _ = run(capsys, "experiment", "noc-compare", *argv)
    assert code == 0 and plot.stat().st_size > 0
    result = json.loads(out)
    col = {c: i for i, c in enumerate(result["columns"])}
    measured = [r for r in result["rows"] if r[col["source"]] == "model"]
    assert [(r[col["network"]], r[col["length"]]) for r in measured] == [
        ("circuit-tree-paper", 1),
        ("circuit-tree-paper", 2),
        ("hypercube", 1),
        ("hypercube", 2),
    ]
    for r in measured:
        assert 0 < r[col["random"]] <= 1 and r[col["zero_load"]] > 0
    assert result["rtl_equals_model"] is None


def _simulator() -> str:
    return "icarus" if shutil.which("iverilog") else "verilator"


@pytest.mark.cocotb
@pytest.mark.parametrize(
    "name",
    [
        "circuit-tree-paper",
        "rn1-bidelta-stream",
        "hypercube",
        "leiserson-online",
    ],
)
def test_rtl_equals_model(tmp_path, name):
    from fattree.sim.experiments.noc_compare import model_figures, rtl_figures

    opts = {
        "patterns": ["random", "hotspot"],
        "fractions": [0.3, 1.0],
        "warmup": 30,
        "cycles": 300,
        "seed": 2,
        "simulator": _simulator(),
    }
    net = load_network(name, 4, 2)
    rtl = rtl_figures(net, opts, lambda _: None, tmp_path)
    rtl.pop("cycles_per_second")
    assert rtl == model_figures(net, opts)
    assert rtl["zero_load"]["messages"] == 12
    assert all(p["delivered"] > 0 for p in rtl["points"])


def test_retry_strategy_reaches_the_networks_that_retry():
    """``--retry`` sets the senders' strategy of the networks that have one; the others have
    none to set, and the synthesis figures (measured with immediate retries) do not apply."""
    for name in ("circuit-tree-paper", "rn1-bidelta-stream"):
        assert load_network(name, 4, 2, "round").params["retry"] == "round"
    assert "retry" not in load_network("hypercube", 4, 2, "round").params
    records = [
        {"design": "rn1-bidelta-stream", "params": load_network("rn1-bidelta-stream", 4, 2).params}
    ]
    records[0] |= {"luts": 1, "ffs": 1, "fmax_mhz": 100.0, "seed": 1}
    assert synthesis_of(load_network("rn1-bidelta-stream", 4, 2), records)["luts"] == 1
    assert synthesis_of(load_network("rn1-bidelta-stream", 4, 2, "backoff"), records) is None


@pytest.mark.cocotb
@pytest.mark.parametrize(
    "name, retry", [("circuit-tree-paper", "backoff"), ("rn1-bidelta-stream", "round")]
)
def test_rtl_equals_model_under_other_retry_strategies(tmp_path, name, retry):
    """The strategy reaches the RTL as well as the model: at a hot spot (every sender refused
    again and again) the figures differ from immediate retries and the RTL gives the model's."""
    from fattree.sim.experiments.noc_compare import model_figures, rtl_figures

    opts = {
        "patterns": ["hotspot"],
        "fractions": [1.0],
        "warmup": 30,
        "cycles": 300,
        "seed": 2,
        "simulator": _simulator(),
    }
    net = load_network(name, 4, 2, retry)
    rtl = rtl_figures(net, opts, lambda _: None, tmp_path)
    rtl.pop("cycles_per_second")
    assert rtl == model_figures(net, opts)
    assert rtl["points"] != model_figures(load_network(name, 4, 2), opts)["points"]


def _one_source_never_delivered(window: int, starved=(0,)) -> dict:
    """Shift traffic on 4 nodes through a network that takes every message and delivers it the
    next cycle, except those of the nodes ``starved``, which it takes and never delivers."""
    run = NetworkLoad(4, 8, 1, Point("shift", 1.0, 0, window))
    pending = []
    while not run.finished:
        tx, _ = run.inputs()
        rx = [None] * 4
        for dest, word in pending:
            rx[dest] = (word, 1)
        pending = [(b[0], b[1]) for p, b in enumerate(tx) if b is not None and p not in starved]
        run.observe([1] * 4, rx)
    return run.figures()


def test_starvation_figures_show_a_starved_source():
    # Node 0's messages are taken from cycle 0 and never arrive: its share is 0 and the
    # oldest of them has waited the whole window; the others wait one cycle.
    figures = _one_source_never_delivered(window=50)
    assert figures["worst_share"] == 0.0
    assert figures["wait_max"] == 50
    assert figures["net_p99"] == 1
    fair = _one_source_never_delivered(window=50, starved=())
    assert (fair["worst_share"], fair["wait_max"]) == (1.0, 1)
