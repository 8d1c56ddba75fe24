"""The scheduler models and `fattree schedule` on FT(l, m, w) with m != w."""

import json
import random

import pytest

from fattree.scripts.main import main
from fattree.sim.models.scheduler import (
    SchedulerModel,
    level_wise_by_level,
    optimal_ports,
    optimal_rounds,
    schedule,
)
from fattree.spec.scheduler import GeneralizedFatTree
from fattree.spec.topology import FatTree

MW = [(2, 4, 2), (2, 2, 4), (3, 4, 2), (3, 2, 4), (3, 2, 3), (3, 3, 2), (4, 2, 4), (3, 8, 2)]


def walk(tree, src, dst, ports):
    """The links of a route found by walking the wiring (up_neighbour, down_neighbour) from
    the source, not by the route formulas: (up links, down links)."""
    s, _ = tree.node_switch(src)
    up, parents = [], []
    for h, p in enumerate(ports):
        up.append(("up", h, s, p))
        _, s, _ = tree.up_neighbour(h, s, p)
        parents.append(s)
    # Down: at each level take the down port whose child is on the way to dst's leaf switch.
    target, _ = tree.node_switch(dst)
    down, t = [], s
    for h in reversed(range(1, len(ports) + 1)):
        for q in tree.down_ports():
            _, child, up_port = tree.down_neighbour(h, t, q)
            if tree.ancestor(target, ports[: h - 1]) == child:
                down.append(("down", h - 1, child, up_port))
                t = child
                break
        else:
            raise AssertionError(f"no way down from SW({h}, {t}) to leaf switch {target}")
    return up, down


def check_grants(tree, grants):
    """Every granted route walked on the wiring: it reaches the destination, comes down by
    the ports it went up by (Theorem 2), and no link is used twice."""
    used = set()
    for g in grants:
        if not g.granted:
            continue
        assert len(g.ports) == tree.common_level(g.src, g.dst)
        up, down = walk(tree, g.src, g.dst, g.ports)
        assert [x[3] for x in down] == list(reversed(g.ports))
        assert set(up) | set(down) == {tuple(x) for x in tree.route(g.src, g.dst, g.ports)[1:-1]}
        for link in up + down:
            assert (link, g.round) not in used, link
            used.add((link, g.round))


def permutation(tree, rng):
    dst = list(tree.nodes())
    rng.shuffle(dst)
    return list(zip(tree.nodes(), dst, strict=True))


@pytest.mark.parametrize("levels, m, w", MW)
def test_models_on_random_permutations(levels, m, w):
    tree = GeneralizedFatTree(levels, m, w)
    rng = random.Random(levels * 100 + m * 10 + w)
    for _ in range(5):
        requests = permutation(tree, rng)
        for algorithm in ("level-wise", "greedy", "random"):
            for mode in ("keep", "release"):
                grants = schedule(tree, requests, algorithm, failure_mode=mode, seed=3)
                check_grants(tree, grants)
        # Fig. 7's level-by-level loop gives the same grants as request by request (keep).
        assert level_wise_by_level(tree, requests) == schedule(tree, requests)
        refused = sum(not g.granted for g in schedule(tree, requests))
        if w >= 2 * m - 1:
            assert refused == 0  # Clos's strict-sense condition (see test_scheduler_rtl.py)
        if w >= m:
            grants = schedule(tree, requests, "optimal")
            assert all(g.granted for g in grants)
            check_grants(tree, grants)


def test_tapered_tree_refuses_what_it_cannot_carry():
    # FT(2, 4, 2): a leaf switch has 4 nodes and 2 up links, so of 4 requests leaving one
    # leaf switch at most 2 can be granted, whatever the scheduler.
    tree = GeneralizedFatTree(2, 4, 2)
    requests = [(k, 4 + k) for k in range(4)]
    for algorithm in ("level-wise", "greedy", "random"):
        grants = schedule(tree, requests, algorithm)
        assert [g.granted for g in grants] == [True, True, False, False]
        assert grants[2].failed_level == 0
    with pytest.raises(ValueError, match="the optimal scheduler needs w >= m; FT"):
        optimal_ports(tree, requests)
    with pytest.raises(ValueError, match=r"FT\(2, 4, 2\) has fewer parents than children"):
        optimal_rounds(tree, requests)


def test_non_blocking_exactly_from_2m_minus_1():
    # The same random permutations of 9 nodes on FT(2, 3, w): with w = m = 3 level-wise
    # refuses some (its lowest-port choice blocks a later request), with w = 2m - 1 = 5 none.
    # (w = 4 refused none of these either: the bound is sufficient, not shown necessary.)
    rng = random.Random(11)
    perms = [rng.sample(range(9), 9) for _ in range(3000)]
    for w, blocks in [(3, True), (5, False)]:
        tree = GeneralizedFatTree(2, 3, w)
        refused = sum(not g.granted for p in perms for g in schedule(tree, list(enumerate(p))))
        assert (refused > 0) == blocks, (w, refused)


def test_model_equals_fattree_at_m_equal_w():
    rng = random.Random(4)
    for levels, w in [(2, 4), (3, 4), (4, 2)]:
        ft, gt = FatTree(levels, w), GeneralizedFatTree(levels, w, w)
        requests = permutation(gt, rng)
        for algorithm in ("level-wise", "greedy", "random", "optimal"):
            assert schedule(ft, requests, algorithm, seed=5) == schedule(
                gt, requests, algorithm, seed=5
            )
        assert SchedulerModel(ft).tree == gt


def test_schedule_cli_m(capsys):
    code = main(["schedule", "-l", "3", "-m", "4", "-w", "2", "--random-permutation", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert (data["levels"], data["m"], data["w"], data["nodes"]) == (3, 4, 2, 64)
    tree = GeneralizedFatTree(3, 4, 2)
    requests = [(g["src"], g["dst"]) for g in data["grants"]]
    want = schedule(tree, requests)
    assert [(g["granted"], tuple(g["ports"])) for g in data["grants"]] == [
        (x.granted, x.ports) for x in want
    ]
    assert 0 < data["granted"] < 64
    # Without --m the output has no m key (FT(l, w) output unchanged).
    assert main(["schedule", "-l", "2", "-w", "2", "--random-permutation", "--json"]) == 0
    assert "m" not in json.loads(capsys.readouterr().out)
    assert main(["schedule", "-l", "2", "-m", "4", "-w", "2", "--random-permutation"]) == 0
    assert capsys.readouterr().out.startswith("FT(2, 4, 2), 16 nodes, level-wise")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["-m", "1"], "m must be at least 2, not 1"),
        (["-m", "4", "-w", "2", "-a", "optimal"], "the optimal scheduler needs w >= m"),
        (["-m", "2", "-w", "1000000"], "FT(3, 2, 1000000) has 1000000000000 switches on a level"),
        (["-m", "2", "-l", "30"], "FT(30, 2, 4) has more than 1048576 nodes"),
    ],
)
def test_schedule_cli_m_errors(argv, message, capsys):
    code = main(["schedule", "--random-permutation", *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_schedulability_experiment_m_not_w():
    # `fattree experiment schedulability --sizes 2x4x2,3x2x4`: the rows of FT(l, m, w) are the
    # models' ratios on the same permutations (drawn here as the experiment draws them).
    import argparse

    from fattree.sim.experiments import registry

    experiment = registry()["schedulability"]
    parser = argparse.ArgumentParser()
    experiment.add_arguments(parser)
    args = parser.parse_args(["--sizes", "2x4x2,3x2x4", "--trials", "3", "--no-rounds"])
    result = experiment.run(args, lambda _text: None)
    rows = {(r[0], r[2], r[3]): r for r in result.rows}
    assert ("FT(2,4,2)", "optimal", "-") not in rows  # w < m: no one-round optimum
    assert rows[("FT(3,2,4)", "optimal", "-")][4] == 100
    assert rows[("FT(3,2,4)", "level-wise", "keep")][4:7] == [100, 100, 100]  # w >= 2m - 1
    for name, tree in [("FT(2,4,2)", GeneralizedFatTree(2, 4, 2))]:
        rng = random.Random(f"1-{name}")
        ratios = []
        for _ in range(3):
            dst = list(tree.nodes())
            rng.shuffle(dst)
            grants = schedule(tree, list(enumerate(dst)), "greedy", failure_mode="release")
            ratios.append(100 * sum(g.granted for g in grants) / len(grants))
        row = rows[(name, "greedy", "release")]
        assert row[4:7] == [round(sum(ratios) / 3, 2), round(min(ratios), 2), round(max(ratios), 2)]
        assert row[5] < 100  # the tapered tree refuses


@pytest.mark.parametrize(
    "argv, message",
    [
        (["draw", "scheduler", "-p", "m=8", "-p", "w=4"], "FT(3, 8, 4) (m != w) is not drawn yet"),
        (["prove", "scheduler", "-p", "m=4"], "the scheduler proof has no parameter 'm'"),
        (["verilog", "scheduler", "-p", "m=3"], "parameter m: m must be empty (m = w) or a power"),
    ],
)
def test_commands_that_do_not_take_m_say_so(argv, message, capsys, tmp_path):
    # Nothing drawn or proved for FT(l, w) when FT(l, m, w) was asked for.
    out = {"draw": ["-o", str(tmp_path / "out.svg")], "verilog": ["-o", str(tmp_path / "out.v")]}
    code = main([*argv, *out.get(argv[0], [])])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1
