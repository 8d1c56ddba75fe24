"""``fattree schedule``: request files, results against the models, one-line errors."""

import json
import random
import re
import shlex
from pathlib import Path

import pytest

from fattree.scripts.main import main
from fattree.sim.models.scheduler import schedule
from fattree.spec.topology import FatTree

ROOT = Path(__file__).resolve().parent.parent


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def permutation_file(tmp_path, tree, seed, kind="csv"):
    dst = list(tree.nodes())
    random.Random(seed).shuffle(dst)
    pairs = list(zip(tree.nodes(), dst, strict=True))
    path = tmp_path / f"requests.{kind}"
    if kind == "csv":
        path.write_text("src,dst\n" + "".join(f"{s},{d}\n" for s, d in pairs))
    else:
        path.write_text(json.dumps([{"src": s, "dst": d} for s, d in pairs], indent=1))
    return path, pairs


@pytest.mark.parametrize("kind", ["csv", "json"])
@pytest.mark.parametrize("algorithm", ["level-wise", "greedy", "random", "optimal"])
@pytest.mark.parametrize("failure_mode", ["keep", "release"])
def test_json_output_equals_model(capsys, tmp_path, kind, algorithm, failure_mode):
    tree = FatTree(3, 4)
    path, pairs = permutation_file(tmp_path, tree, 11, kind)
    code, out, err = run(
        capsys,
        "schedule",
        "--levels=3",
        "--w=4",
        "--algorithm",
        algorithm,
        "--failure-mode",
        failure_mode,
        "--seed=5",
        "--json",
        path,
    )
    assert code == 0, err
    data = json.loads(out)
    grants = schedule(tree, pairs, algorithm, failure_mode=failure_mode, seed=5)
    assert data["requests"] == 64 and data["granted"] == sum(g.granted for g in grants)
    assert [(g["src"], g["dst"]) for g in data["grants"]] == pairs
    assert [g["granted"] for g in data["grants"]] == [g.granted for g in grants]
    assert [tuple(g["ports"]) for g in data["grants"]] == [g.ports for g in grants]
    if algorithm == "optimal":
        assert data["ratio"] == 1.0


def test_text_output(capsys, tmp_path):
    path = tmp_path / "r.csv"
    # Fig. 4 in FT(3, 4): leaf switches 0 and 1 both send to leaf switch 8.
    path.write_text("# two requests\nsrc,dst\n0,32\n\n4,33  # second\n")
    code, out, _ = run(capsys, "schedule", "--algorithm", "greedy", path)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("FT(3, 4), 64 nodes, greedy, failure mode keep: 1 of 2 granted")
    assert lines[1].split() == ["line", "src", "dst", "H", "granted", "P0", "P1"]
    assert lines[2].split() == ["3", "0", "32", "2", "yes", "0", "0"]
    assert lines[3].split() == ["5", "4", "33", "2", "no", "(level", "0)", "0", "1"]
    code, out, _ = run(capsys, "schedule", path)
    assert "2 of 2 granted" in out.splitlines()[0]


def test_readme_example_runs_on_the_sample_file(capsys, monkeypatch):
    # The README's command line as written, from the root of a clone.
    (command,) = re.findall(r"`(fattree schedule [^`]*)`", (ROOT / "README.md").read_text())
    argv = shlex.split(command)
    monkeypatch.chdir(ROOT)
    code, out, err = run(capsys, *argv[1:])
    assert code == 0, err
    assert out.startswith("FT(3, 4), 64 nodes, level-wise, failure mode keep: 9 of 9 granted")
    # The README says greedy refuses one of the nine.
    greedy = [("greedy" if a == "level-wise" else a) for a in argv[1:]]
    code, out, err = run(capsys, *greedy)
    assert code == 0, err
    assert "8 of 9 granted" in out.splitlines()[0]


def test_random_permutation_and_rounds(capsys, tmp_path):
    code, out, _ = run(
        capsys, "schedule", "--random-permutation", "-l", "2", "-w", "8", "-a", "optimal", "--json"
    )
    data = json.loads(out)
    assert code == 0 and data["requests"] == data["granted"] == 64
    path = tmp_path / "hot.json"
    # Node 0 sends three times and node 5 receives twice: three rounds at least and at most.
    path.write_text("[[0, 5], [0, 6], [0, 7], [1, 5], [2, 3]]")
    code, out, _ = run(capsys, "schedule", "-a", "optimal", "--rounds", "--json", path)
    data = json.loads(out)
    assert code == 0 and data["rounds"] == 3 and data["granted"] == 5
    assert sorted(g["round"] for g in data["grants"] if g["src"] == 0) == [0, 1, 2]
    code, out, _ = run(capsys, "schedule", "--rounds", path)
    assert code == 0 and "5 of 5 granted" in out and "3 rounds" in out.splitlines()[0]


def test_stdin(capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("0,63\n63,0\n"))
    code, out, _ = run(capsys, "schedule", "--json", "-")
    assert code == 0 and json.loads(out)["granted"] == 2


@pytest.mark.parametrize(
    "text, suffix, message",
    [
        ("0,1\n2\n", "csv", "{f} line 2: expected 'source,destination', got 1 field: '2'"),
        ("0,1,2\n", "csv", "{f} line 1: expected 'source,destination', got 3 fields: '0,1,2'"),
        ("0,1\nx,3\n", "csv", "{f} line 2: source must be a node number, not 'x'"),
        ("0,1\n3,1.5\n", "csv", "{f} line 2: destination must be a node number, not '1.5'"),
        ("0,64\n", "csv", "{f} line 1: destination 64 is not a node of FT(3, 4) (0..63)"),
        ("-1,4\n", "csv", "{f} line 1: source -1 is not a node of FT(3, 4) (0..63)"),
        (
            "0,1\n\n0,2\n",
            "csv",
            "{f} line 3: source 0 already sends on line 1 (give --rounds to schedule several "
            "rounds)",
        ),
        (
            "[[0, 1],\n [2, 1]]",
            "json",
            "{f} line 2: destination 1 already receives on line 1 (give --rounds to schedule "
            "several rounds)",
        ),
        ("[[0, 1],\n [2]]", "json", "{f} line 2: expected [source, destination], not [2]"),
        ("[[0, 1],\n [2, 3.0]]", "json", "{f} line 2: destination must be a node number, not 3.0"),
        ('[\n["0", 1]]', "json", '{f} line 2: source must be a node number, not "0"'),
        (
            '[{"src": 0, "to": 1}]',
            "json",
            '{f} line 1: a request object has keys src and dst, not {"src": 0, "to": 1}',
        ),
        ("[[0, 1],\n [2, 3]", "json", "{f} line 2: expected ',' or ']' in the array"),
        ("[[0, 1],\n [2, 3}]", "json", "{f} line 2: invalid JSON: Expecting ',' delimiter"),
        ('{"requests": []}', "json", "{f} line 1: expected a JSON array of requests"),
        ("[[0, 1]]\n[]", "json", "{f} line 2: extra data after the array"),
        # Nothing to schedule is an error, not "0 of 0 granted (100.0 %)".
        ("", "csv", "{f}: no requests to schedule"),
        ("# comments only\nsource,destination\n", "csv", "{f}: no requests to schedule"),
        ("[]", "json", "{f}: no requests to schedule"),
    ],
)
def test_file_errors_name_the_line(capsys, tmp_path, text, suffix, message):
    path = tmp_path / f"bad.{suffix}"
    path.write_text(text)
    code, out, err = run(capsys, "schedule", path)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        f"fattree schedule: error: {message.replace('{f}', str(path))}"
    ]


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (["--levels", "0", "--random-permutation"], 2, "levels must be a positive integer, not 0"),
        (["--w", "1", "--random-permutation"], 2, "w must be at least 2, not 1"),
        (
            ["--levels", "6", "--w", "16", "--random-permutation"],
            2,
            "FT(6, 16) has 16777216 nodes; the scheduler models take at most 1048576",
        ),
        ([], 2, "give a REQUESTS file (CSV or JSON) or --random-permutation"),
        (
            ["--random-permutation", "x.csv"],
            2,
            "give either a REQUESTS file or --random-permutation, not both",
        ),
        (["/nonexistent/r.csv"], 1, "cannot read /nonexistent/r.csv: No such file or directory"),
    ],
)
def test_argument_errors(capsys, argv, code, message):
    got, out, err = run(capsys, "schedule", *argv)
    assert got == code
    assert err.strip().splitlines() == [f"fattree schedule: error: {message}"]


def test_schedulability_experiment(capsys, tmp_path):
    plot = tmp_path / "fig9.png"
    code, out, err = run(
        capsys,
        "experiment",
        "schedulability",
        "--trials=4",
        "--sizes=2x4,3x2",
        "--algorithms=level-wise,greedy,optimal",
        "--failure-mode=keep",
        "--seed=3",
        "--plot",
        plot,
        "--json",
    )
    assert code == 0, err
    data = json.loads(out)
    assert plot.stat().st_size > 0
    by_key = {(r[0], r[2]): r for r in data["rows"]}
    assert set(by_key) == {
        (size, a) for size in ["FT(2,4)", "FT(3,2)"] for a in ["level-wise", "greedy", "optimal"]
    }
    for size in ["FT(2,4)", "FT(3,2)"]:
        assert by_key[(size, "optimal")][4:7] == [100, 100, 100]
        assert by_key[(size, "optimal")][-1] == 1  # one round
        ratios = data["ratios"][f"{size} level-wise keep"]
        assert len(ratios) == 4 and by_key[(size, "level-wise")][4] == round(
            100 * sum(ratios) / 4, 2
        )
    assert any("level-0 switch" in note for note in data["notes"])
    assert any("failure mode 'keep'" in note for note in data["notes"])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--sizes", "3by4"], "--sizes wants LxW items like 3x4, not '3by4'"),
        (["--trials", "0"], "--trials must be at least 1, not 0"),
        (
            ["--algorithms", "best"],
            "--algorithms: unknown algorithm 'best'; known: level-wise, greedy, random, optimal",
        ),
        (["--sizes", "3x1"], "w must be at least 2, not 1"),
    ],
)
def test_schedulability_errors(capsys, argv, message):
    code, out, err = run(capsys, "experiment", "schedulability", *argv)
    assert code == 2
    assert err.strip().splitlines() == [f"fattree experiment: error: {message}"]
