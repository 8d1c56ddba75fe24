"""The volume model of universal fat-trees (Leiserson 1985, Lemma 3 and Theorem 4) and the
experiments ``leiserson-volume`` and ``decomposition-trees`` (sim/experiments/
leiserson_volume.py): the layout's geometry checked box by box, its node nets against the
real concentrator graphs, a tree worked by hand, the volumes against Theorem 4 and the
Remark's range, and the experiments' rows against independent recomputation."""

from __future__ import annotations

import argparse
import json
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fattree.sim.experiments import registry
from fattree.sim.experiments.leiserson_volume import (
    FAMILIES,
    layout,
    lemma3_box,
    lg_plus,
    node_nets,
    root_capacity,
    route_permutation,
)
from fattree.spec.capacities import TreeLayout, node_components, universal_capacities
from fattree.spec.decomposition import balance, cutting_plane_tree

EXPONENTS = [Fraction(2, 3), Fraction(3, 4), Fraction(5, 6), Fraction(1)]
RANDOM_PERMS = settings(max_examples=40, deadline=None, derandomize=True, database=None)


def run(name, *argv):
    experiment = registry()[name]
    parser = argparse.ArgumentParser()
    experiment.add_arguments(parser)
    return experiment.run(parser.parse_args(list(argv)), lambda _text: None)


# -- Lemma 3 -----------------------------------------------------------------------------------


def test_lemma3_box_by_hand():
    # k = ceil(sqrt(m)); 2k x 2k x (3k + 1) built, 2hk x 2hk x 2 ceil((3k + 1)/h) flattened.
    assert lemma3_box(1) == (2, 2, 4)
    assert lemma3_box(9) == (6, 6, 10)
    assert lemma3_box(10) == (8, 8, 13)
    assert lemma3_box(10, 3) == (24, 24, 10)
    assert lemma3_box(100, 4) == (80, 80, 16)


def test_lemma3_box_shape():
    # Lemma 3: sides O(h sqrt m), O(h sqrt m), O(sqrt m / h): here at most 2h(sqrt m + 1)
    # and (6(sqrt m + 1) + 2)/h + 2; flattening never shrinks the volume below 12 k^3.
    for m in (1, 2, 7, 50, 1000, 10**6):
        for h in (1, 2, 3, 5, 17):
            a, b, c = lemma3_box(m, h)
            root = math.sqrt(m)
            assert a == b <= 2 * h * (root + 1)
            assert c <= (6 * (root + 1) + 2) / h + 2
            assert a * b * c >= 12 * m**1.5


def check_routing(perm):
    """The wires of route_permutation: unit steps, no cell twice (in one wire or two), from
    each terminal to its image, inside lemma3_box."""
    k = math.isqrt(len(perm))
    paths = route_permutation(perm)
    box = lemma3_box(k * k)
    used = set()
    for i, path in enumerate(paths):
        row, col = divmod(i, k)
        row2, col2 = divmod(perm[i], k)
        assert path[0] == (2 * col, 2 * row, 0)
        assert path[-1] == (2 * col2, 2 * row2 + 1, 3 * k)
        for a, b in zip(path, path[1:], strict=False):
            assert sum(abs(u - v) for u, v in zip(a, b, strict=True)) == 1
        assert len(set(path)) == len(path)
        assert not used & set(path), f"wire {i} crosses another"
        used |= set(path)
        assert all(0 <= c < side for cell in path for c, side in zip(cell, box, strict=True))
    # The box is the routing's own bounding box (no slack in the constants).
    assert tuple(max(c[a] for c in used) + 1 for a in range(3)) == box


@RANDOM_PERMS
@given(perm=st.integers(1, 8).flatmap(lambda k: st.permutations(range(k * k))))
def test_lemma3_routes_any_permutation(perm):
    check_routing(perm)


@pytest.mark.parametrize("k", [1, 2, 5, 8])
def test_lemma3_routes_adversarial_permutations(k):
    n = k * k
    check_routing(list(range(n)))  # identity: every wire straight across all three stages
    check_routing(list(reversed(range(n))))  # every wire changes row and column
    check_routing([(i % k) * k + i // k for i in range(n)])  # transpose: rows become columns
    check_routing([i // k * k + (i + 1) % k for i in range(n)])  # one shift within each row
    # A Latin square: row r's wires go to k different rows, each to a column shifted by r.
    check_routing([(i % k) * k + (i // k + i % k) % k for i in range(n)])


def test_route_permutation_rejects_non_permutations():
    with pytest.raises(ValueError, match="perm must be a permutation of k\\^2 terminals"):
        route_permutation([0, 1, 2])
    with pytest.raises(ValueError, match="perm must be a permutation"):
        route_permutation([0, 0, 1, 2])


# -- node nets against the real graphs -------------------------------------------------------


@pytest.mark.parametrize(("n", "w"), [(16, 16), (16, 7), (64, 64), (64, 16)])
def test_node_nets_count_the_built_concentrator_graphs(n, w):
    tree = TreeLayout.universal(n, w)
    caps = tree.capacities
    for k in range(tree.levels):
        edges = sum(stage.graph.edges for port in "ULR" for stage in tree.cascade(k, port).stages)
        inputs = caps[k] + 2 * caps[k + 1]
        external = 2 * (caps[k] + 2 * caps[k + 1])
        assert node_nets(caps, k) == external + 2 * inputs + edges
        assert node_components(caps, k)["crosspoints"] == edges


# -- the layout ----------------------------------------------------------------------------------


def test_layout_of_four_leaves_by_hand():
    # caps (4, 2, 1). Level 1: external 2*2 + 4*1 = 8, selectors 2 + 2 (8 branch wires), U an
    # identity, L and R one complete 3 -> 1 stage (3 edges each): 22 nets, k = 5, box
    # 10 x 10 x 16 between two unit processors along x (cross-section padded): 18 x 10 x 10.
    # Level 0: external 2*4 + 4*2 = 16, selectors 4 + 2*2 = 8 (16 branch wires), U an
    # identity (no edges), L and R one complete 6 -> 2 stage (12 edges each): 56 nets, k = 8,
    # box 16 x 16 x 25. Child axis x, so y or z: both 10, y first; cross-section x, z is
    # 18 x 10 < 16: padded to 18 x 16, h = 1; y = 2*10 + 25 = 45.
    lay = layout(4, 4)
    assert lay.capacities == (4, 2, 1)
    assert lay.nets == (56, 22)
    assert lay.boxes == ((18, 45, 16), (18, 10, 10), (1, 1, 1))
    assert lay.axes == (1, 0)
    assert lay.volume == 18 * 45 * 16


@pytest.mark.parametrize("lgn", [4, 6, 9, 12, 20, 31])
@pytest.mark.parametrize("e", EXPONENTS)
def test_layout_geometry(lgn, e):
    n = 1 << lgn
    w = root_capacity(n, e)
    lay = layout(n, w)
    assert lay.capacities == universal_capacities(n, w)  # the hardware's capacity rule
    components = n + sum(
        (1 << k) * sum(node_components(lay.capacities, k).values()) for k in range(lgn)
    )
    assert lay.components == components
    for k in range(lgn):
        box, child, axis = lay.boxes[k], lay.boxes[k + 1], lay.axes[k]
        thick, h = lay.slabs[k]
        cross = [a for a in range(3) if a != axis]
        # Two children side by side along the axis, the node's slab between them.
        assert box[axis] == 2 * child[axis] + thick
        assert all(box[a] >= child[a] for a in cross)
        # The flattened Lemma 3 box fits the slab's cross-section.
        foot, _, height = lemma3_box(lay.nets[k], h)
        assert height == thick and foot <= min(box[a] for a in cross)
        # The node's up channel (both directions) leaves through the slab's edge.
        assert thick * max(box[a] for a in cross) >= 2 * lay.capacities[k]
        # The child's slab spans the child's cross-section, so it meets this slab.
        if k + 1 < lgn:
            assert lay.axes[k + 1] != axis
    assert lay.volume >= lay.components  # every component a unit cube at least


def test_root_capacity_is_the_exact_ceiling():
    for lgn in (6, 7, 10, 33, 60):
        n = 1 << lgn
        for e in EXPONENTS:
            w = root_capacity(n, e)
            p, q = e.numerator, e.denominator
            assert w**q >= n**p > (w - 1) ** q
            assert w <= n and w**3 >= n**2


# -- Theorem 4 and the Remark ---------------------------------------------------------------------


def volumes(e, sizes=range(16, 61, 4)):
    return {lgn: layout(1 << lgn, root_capacity(1 << lgn, e)).volume for lgn in sizes}


@pytest.mark.parametrize("e", EXPONENTS)
def test_theorem4_holds_with_a_constant(e):
    # v = O((w lg(n/w))^(3/2)): the ratio stays within a factor 1.6 from n = 2^16 to 2^60.
    ratios = []
    for lgn, v in volumes(e).items():
        n = 1 << lgn
        w = root_capacity(n, e)
        ratios.append(v / (w * lg_plus(n / w)) ** 1.5)
    assert max(ratios) < 1.6 * min(ratios)


@pytest.mark.parametrize("e", EXPONENTS[:3])
def test_theorem4_lg_factor_is_real(e):
    # Below w = n the volume is not O(w^(3/2)): v / w^1.5 grows like lg(n/w)^(3/2).
    v = volumes(e, (16, 60))
    w16, w60 = root_capacity(1 << 16, e), root_capacity(1 << 60, e)
    growth = (v[60] / w60**1.5) / (v[16] / w16**1.5)
    expected = (lg_plus((1 << 60) / w60) / lg_plus((1 << 16) / w16)) ** 1.5
    assert 0.5 * expected < growth < 2 * expected and growth > 3


def test_remark_range():
    # Upper end: at w = n, v = Theta(n^(3/2)) (the ratio settles).
    top = volumes(Fraction(1))
    r = [v / (1 << lgn) ** 1.5 for lgn, v in top.items()]
    assert max(r) < 1.6 * min(r)
    # Lower end: at w = n^(2/3) the volume is Omega(n lg n) but not O(n lg n): Theorem 4's
    # own formula gives n (lg n / 3)^(3/2), and v / (n lg n) grows like sqrt(lg n).
    bottom = volumes(Fraction(2, 3))
    per = {lgn: v / ((1 << lgn) * lgn) for lgn, v in bottom.items()}
    assert per[60] / per[16] > 0.6 * math.sqrt(60 / 16)
    tight = [v / ((1 << lgn) * (lgn / 3) ** 1.5) for lgn, v in bottom.items()]
    assert max(tight) < 1.6 * min(tight)
    # And more root capacity never costs less volume.
    for lgn in (8, 20, 40):
        n = 1 << lgn
        vs = [layout(n, root_capacity(n, e)).volume for e in EXPONENTS]
        assert vs == sorted(vs)


# -- the experiments ---------------------------------------------------------------------------


def test_volume_experiment_rows():
    result = run("leiserson-volume", "--sizes", "6,10", "--exponents", "2/3,1", "--per-level")
    trees = [r for r in result.rows if r[3] == "tree"]
    assert [(r[0], r[1]) for r in trees] == [(64, "2/3"), (64, "1"), (1024, "2/3"), (1024, "1")]
    for row in trees:
        n, w, v = row[0], row[2], row[9]
        lay = layout(n, w)
        assert v == lay.volume and row[8] == "x".join(map(str, lay.boxes[0]))
        assert row[10] == pytest.approx(v / (w * max(1, math.log2(n / w))) ** 1.5)
        assert row[12] == pytest.approx(v / (n * math.log2(n)))
        assert row[13] == pytest.approx(v / n**1.5)
    levels = [r for r in result.rows if r[0] == 64 and r[1] == "1" and r[3] != "tree"]
    assert [r[4] for r in levels] == list(universal_capacities(64, 64)[1:6])


def test_decomposition_experiment_rows():
    result = run("decomposition-trees", "--n", "64", "--seed", "3")
    families = {r[0] for r in result.rows}
    assert families == set(FAMILIES)
    for family in FAMILIES:
        rows = [r for r in result.rows if r[0] == family]
        graph = FAMILIES[family][0](64, 3)
        bal = balance(cutting_plane_tree(graph))
        assert [r[6] for r in rows] == bal.widths()
        for r in rows:
            assert r[6] <= r[7] <= r[8] <= r[9] * (1 + 1e-9)  # cut <= forest <= Thm 8 <= Cor 9
            if r[4] is not None:
                assert r[3] <= r[4] + 0.01  # Theorem 5 where wires are unit lattice edges
            lo, hi = map(int, r[10].split(".."))
            assert hi - lo <= 1


def test_theorem8_search_never_beats_the_bound():
    # An adversarial search for large w'_i / (4 sum w_k); its instance, rebuilt from the JSON
    # and cut with Graph.cut, must give the rows, and no ratio may exceed 1 (Theorem 8).
    from fattree.spec.decomposition import DecompositionTree, Graph, theorem8_bound

    for seed in (1, 2):
        result = run(
            "theorem8-search",
            "--processors",
            "6",
            "--vertices",
            "20",
            "--steps",
            "400",
            "--seed",
            str(seed),
        )
        extra = result.extra
        graph = Graph(20, tuple(map(tuple, extra["edges"])), tuple(range(6)))
        tree = DecompositionTree(graph, 4, tuple(extra["leaf_of"]))
        bal = balance(tree)
        bound = theorem8_bound(tree.widths(), bal.depth)
        for i, row in enumerate(result.rows):
            labels = bal.labels(i)
            cut = max(graph.cut([v for v in range(20) if labels[v] == q]) for q in range(1 << i))
            assert row[2] == cut and row[3] == bound[i] and cut <= bound[i]
        assert 0 < extra["best"] <= 1


def test_cli(capsys, tmp_path):
    from fattree.scripts.main import main

    assert main(["experiment", "leiserson-volume", "--sizes", "8", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["experiment"] == "leiserson-volume" and len(data["rows"]) == 4
    plot = tmp_path / "v.png"
    assert (
        main(["experiment", "leiserson-volume", "--sizes", "6,8", "--quiet", "--plot", str(plot)])
        == 0
    )
    assert plot.stat().st_size > 0
    plot = tmp_path / "d.svg"
    assert (
        main(
            [
                "experiment",
                "decomposition-trees",
                "--n",
                "16",
                "--families",
                "grid2d,tree",
                "--quiet",
                "--plot",
                str(plot),
            ]
        )
        == 0
    )
    assert plot.stat().st_size > 0
    capsys.readouterr()
    for argv in (
        ["leiserson-volume", "--exponents", "1/2"],
        ["leiserson-volume", "--sizes", "3"],
        ["decomposition-trees", "--n", "1"],
        ["decomposition-trees", "--alpha", "1"],
        ["decomposition-trees", "--families", "torus"],
        ["decomposition-trees", "--seed", "-1"],
        ["theorem8-search", "--processors", "64", "--depth", "3"],
        ["theorem8-search", "--vertices", "4"],
    ):
        try:
            code = main(["experiment", *argv])
        except SystemExit as exc:  # argparse refuses the option's value
            code = exc.code
        assert code == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert [line for line in err if "error:" in line] == err[-1:], argv
        assert "Traceback" not in "".join(err)
