"""One command line: one word per concept across every subcommand.

The parser is walked (argparse's own tables), so a command or an option added later is held
to the same rules: a short option means one long option everywhere, every command that writes
build folders takes ``--build-root``, ranges are written ``A..B``, a retry strategy is named
the same way in every design, and a NAME given twice to ``--param`` is an error.
"""

import argparse
import json
import re

import pytest

from fattree.designs import DESIGNS, build_dir, parse_params
from fattree.params import parse_int_list
from fattree.scripts.main import main, make_parser
from fattree.spec.circuit import RETRY


def _subparsers(parser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _walk(parser, words=()) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser under ``parser`` (itself included), by the words that reach it."""
    found = [(words, parser)]
    for name, sub in _subparsers(parser).items():
        found += _walk(sub, (*words, name))
    return found


PARSERS = dict(_walk(make_parser()))
COMMANDS = {words: p for words, p in PARSERS.items() if words}


def _options(parser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings]


def test_the_walk_finds_every_command():
    # The walk reaches nested commands (experiments, sweeps), so the rules below cover them.
    assert ("verilog",) in COMMANDS and ("sweep", "experiment") in COMMANDS
    assert ("experiment", "load-latency") in COMMANDS


def test_a_short_option_means_one_long_option_everywhere():
    meanings: dict[str, dict[str, list[str]]] = {}
    for words, parser in COMMANDS.items():
        for action in _options(parser):
            longs = [o for o in action.option_strings if o.startswith("--")]
            for short in (o for o in action.option_strings if not o.startswith("--")):
                # A short form is only ever an abbreviation of a long one.
                assert longs, f"{' '.join(words)}: {short} has no long form"
                meanings.setdefault(short, {}).setdefault(longs[0], []).append(" ".join(words))
    clashes = {short: longs for short, longs in meanings.items() if len(longs) > 1}
    assert not clashes, f"short options with several meanings: {clashes}"
    # The ones whose meaning once differed between commands.
    assert set(meanings["-o"]) == {"--output"}
    assert set(meanings["-b"]) == {"--bench-param"}
    assert set(meanings["-n"]) == {"--messages"}


#: Commands that write build folders by default: each takes ``--build-root``.
WRITES = {
    ("verilog",),
    ("sim",),
    ("soak",),
    ("synth",),
    ("prove",),
    ("mutants",),
    ("build",),
    ("draw",),
    ("wave",),
    ("sweep", "synth"),
    ("sweep", "experiment"),
}
#: Commands that write no build folder, and why.
WRITES_NOTHING_BY_DEFAULT = {
    ("designs",): "prints the design table",
    ("monitor",): "reads a board's serial port",
    ("schedule",): "prints the grants",
    ("export",): "writes only into the folder --fusesoc names",
    ("experiment",): "lists the experiments; each is a command of its own",
    ("sweep",): "only gathers the sweeps",
}


def _experiment_builds(parser) -> bool:
    """An experiment that runs a simulator or a synthesis on disk (not amaranth.sim in
    memory): it has build folders."""
    return any(
        o in {"--simulator", "--synthesise"} for a in _options(parser) for o in a.option_strings
    )


def _has_build_root(parser) -> bool:
    return any("--build-root" in a.option_strings for a in _options(parser))


@pytest.mark.parametrize("words", sorted(COMMANDS), ids=" ".join)
def test_every_command_that_writes_takes_build_root(words):
    parser = COMMANDS[words]
    if words[0] == "experiment" and len(words) == 2:
        # The others write only the --plot and --csv files they are given.
        assert _has_build_root(parser) == _experiment_builds(parser)
        return
    assert (words in WRITES) != (words in WRITES_NOTHING_BY_DEFAULT), (
        f"fattree {' '.join(words)}: say whether it writes build folders (WRITES) or not"
    )
    assert _has_build_root(parser) == (words in WRITES)


def test_the_building_experiments_take_build_root():
    for name in ("faults", "load-latency", "topology-cost"):
        assert _has_build_root(COMMANDS["experiment", name]), name


def test_sim_verilog_and_draw_write_under_build_root(tmp_path, monkeypatch):
    from fattree.scripts import verilog

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(verilog, "elaborate_verilog", lambda *a, **k: "module selector();\n")
    assert main(["verilog", "selector", "--build-root", "out"]) == 0
    params = parse_params(DESIGNS["selector"], [])
    assert (
        build_dir("verilog", DESIGNS["selector"], params, tmp_path / "out") / "selector.v"
    ).exists()
    assert main(["draw", "circuit-tree-paper", "-p", "leaves=4", "--build-root", "pictures"]) == 0
    assert list((tmp_path / "pictures" / "draw" / "circuit-tree-paper").glob("*.svg"))
    assert not (tmp_path / "build").exists()


# -- ranges -----------------------------------------------------------------------------------


def _helps():
    for words, parser in COMMANDS.items():
        for action in parser._actions:
            if action.help and action.help is not argparse.SUPPRESS:
                yield words, action, action.help


def test_help_texts_write_ranges_one_way():
    # A..B everywhere; the old A-B spelling (still taken by the parser) is never shown.
    for words, action, text in _helps():
        assert not re.search(r"\bA-B\b", text), f"{' '.join(words)} {action.option_strings}"
    assert "A..B" in COMMANDS["sweep", "synth"]._option_string_actions["--seeds"].help


@pytest.mark.parametrize(
    "text, values",
    [
        ("4..6", [4, 5, 6]),
        ("4,8,20", [4, 8, 20]),
        ("1..3,7", [1, 2, 3, 7]),
        ("2,1..3", [2, 1, 3]),
        ("5", [5]),
        ("1-3", [1, 2, 3]),
    ],
)
def test_one_range_syntax(text, values):
    assert parse_int_list(text) == values


def test_sizes_and_seeds_take_the_same_ranges(capsys):
    from fattree.sim.experiments import int_list
    from fattree.sweep import parse_seeds

    assert int_list("2..4") == parse_seeds("2..4") == int_list("2-4") == [2, 3, 4]
    assert parse_seeds("1..2,5") == int_list("1..2,5") == [1, 2, 5]


# -- retry strategies -------------------------------------------------------------------------

RETRY_DESIGNS = sorted(name for name, d in DESIGNS.items() if "retry" in {p.name for p in d.params})


def test_retry_designs_are_the_circuit_tree_and_the_rn1_endpoint_networks():
    assert {"circuit-tree-paper", "rn1-bidelta-stream", "rn1-fat-tree"} <= set(RETRY_DESIGNS)


@pytest.mark.parametrize("design", RETRY_DESIGNS)
def test_retry_is_named_the_same_in_every_design(design):
    record = DESIGNS[design]
    assert record.defaults()["retry"] == "immediate"
    for code, name in enumerate(RETRY):
        assert parse_params(record, [f"retry={name}"])["retry"] == name
        # The codes are aliases, canonicalised to the name (and so to one build folder).
        assert parse_params(record, [f"retry={code}"])["retry"] == name
    with pytest.raises(ValueError, match=r"one of immediate, round, backoff \(or 0, 1, 2\)"):
        parse_params(record, ["retry=3"])


def test_designs_lists_the_retry_names_and_their_codes(capsys):
    assert main(["designs", "circuit-tree-paper", "--json"]) == 0
    retry = next(p for p in json.loads(capsys.readouterr().out)["params"] if p["name"] == "retry")
    assert retry["kind"] == "choice" and retry["choices"] == list(RETRY)
    assert retry["aliases"] == {"0": "immediate", "1": "round", "2": "backoff"}


def test_circuit_tree_default_folder_names_the_retry():
    params = parse_params(DESIGNS["circuit-tree-paper"], [])
    folder = build_dir("verilog", DESIGNS["circuit-tree-paper"], params)
    assert folder.name == "leaves16-length2-retryimmediate-seed1-width8"


def test_the_component_gets_the_retry_by_name(monkeypatch, tmp_path, built_but_unused):
    from fattree.scripts import verilog

    built = {}

    def elaborate(design, params, *args, **kwargs):
        built.update(params)
        # The component takes what the command line parsed.
        assert design.build(params).retry == "backoff"
        return "module circuit_tree();\n"

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(verilog, "elaborate_verilog", elaborate)
    argv = ["verilog", "circuit-tree-paper", "-p", "leaves=2", "-p", "retry=2", "-o", "x.v"]
    assert main(argv) == 0
    assert built["retry"] == "backoff"


def test_prove_takes_retry_names(capsys, monkeypatch):
    from fattree.scripts import prove

    seen = {}
    monkeypatch.setattr(prove, "prove", lambda design, params, **kw: seen.update(params) or [])
    assert main(["prove", "circuit-tree-paper", "-p", "retry=backoff", "--json"]) == 0
    assert seen["retry"] == "backoff"
    assert main(["prove", "network-interface", "-p", "retry=1", "--json"]) == 0
    assert seen["retry"] == "round"
    assert main(["prove", "circuit-tree-paper", "-p", "retry=later"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "fattree prove: error: parameter retry must be one of immediate, round, backoff "
        "(or 0, 1, 2), not 'later'"
    ]


# -- a NAME given twice -----------------------------------------------------------------------

#: What each command with --param needs besides the design (sweeps are left out: there a
#: repeated NAME is a grid axis).
TWICE = {
    "verilog": [],
    "sim": [],
    "soak": [],
    "synth": [],
    "prove": [],
    "mutants": [],
    "build": [],
    "export": ["--fusesoc", "out"],
    "draw": [],
}


def test_every_command_with_param_is_checked_for_repeats():
    with_param = {
        words[0]
        for words, parser in COMMANDS.items()
        if len(words) == 1 and "--param" in parser._option_string_actions
    }
    assert with_param == set(TWICE)


@pytest.mark.parametrize("command", sorted(TWICE))
def test_a_repeated_param_is_one_error_line(capsys, tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    argv = [command, "circuit-tree-paper", *TWICE[command], "-p", "leaves=4", "-p", "leaves=8"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"fattree {command}: error: --param leaves given twice (leaves=4, leaves=8); give it once"
    ]
    assert not any(tmp_path.iterdir())  # refused before any work


@pytest.mark.parametrize("command", ["sim", "soak"])
def test_a_repeated_bench_param_is_one_error_line(capsys, tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    argv = [command, "circuit-tree-paper", "-b", "backpressure=10", "-b", "backpressure=20"]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"fattree {command}: error: --bench-param backpressure given twice "
        "(backpressure=10, backpressure=20); give it once"
    ]


def _takes(parser, option: str) -> bool:
    return any(option in a.option_strings for a in _options(parser))


WRITES_TO_OUTPUT = sorted(
    words for words, p in COMMANDS.items() if _takes(p, "--output") and _takes(p, "--json")
)


def test_the_output_commands_are_found():
    assert [w[0] for w in WRITES_TO_OUTPUT] == ["draw", "verilog", "wave"]


@pytest.mark.parametrize("words", WRITES_TO_OUTPUT, ids=" ".join)
def test_json_and_output_to_stdout_are_refused_in_one_line(capsys, tmp_path, words):
    # Both would go to stdout, the JSON unreadable after the file; nothing is written.
    target = {"draw": ["selector"], "verilog": ["selector"], "wave": ["circuit-tree-drop"]}
    argv = [*words, *target[words[0]], "-o", "-", "--json", "--build-root", str(tmp_path)]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().splitlines() == [
        f"fattree {words[0]}: error: --json and -o - would both write to stdout; give -o FILE"
        + {"draw": ".svg", "verilog": ".v", "wave": ""}[words[0]]
    ]


def test_no_command_says_workers_for_parallel_jobs():
    # Local parallelism is --jobs/-j everywhere (soak, mutants, sweep).
    assert not [words for words, p in COMMANDS.items() if _takes(p, "--workers")]
    assert sorted(w for w, p in COMMANDS.items() if _takes(p, "--jobs")) == [
        ("mutants",),
        ("soak",),
        ("sweep", "experiment"),
        ("sweep", "synth"),
    ]
