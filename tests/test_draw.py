"""fattree.draw and ``fattree draw``: the pictures hold what the definitions say."""

import json
import xml.etree.ElementTree as ET

import pytest

from fattree.draw import MAX_LEAVES, draw, draw_fat_tree, draw_leiserson
from fattree.scripts.main import main
from fattree.spec.capacities import TreeLayout, universal_capacities
from fattree.spec.topology import FatTree

SVG = "{http://www.w3.org/2000/svg}"


def elements(svg: str, cls: str) -> list[ET.Element]:
    return [e for e in ET.fromstring(svg).iter() if e.get("class") == cls]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("design", ["circuit-tree-paper", "circuit-tree"])
@pytest.mark.parametrize("leaves", [2, 4, 8, 16, 64])
def test_circuit_tree_counts(leaves, design):
    h = leaves.bit_length() - 1
    svg = draw(design, {"leaves": leaves}).svg
    assert f"{design}: {leaves} leaves" in svg
    assert len(elements(svg, "leaf")) == leaves
    assert len(elements(svg, "router")) == leaves // 2 * h
    assert len(elements(svg, "leaf-link")) == leaves
    # The links, found from the top down with down_neighbour (the drawing goes up with
    # up_neighbour), so a mistake in one direction does not hide in the other.
    tree = FatTree(h, 2)
    expected = sorted(
        f"SW({level - 1}, {child}) up {up} - SW({level}, {parent}) down {down}"
        for level in range(1, h)
        for parent in tree.switches(level)
        for down in tree.ports()
        for _, child, up in [tree.down_neighbour(level, parent, down)]
    )
    links = elements(svg, "link")
    assert len(links) == len(tree.up_links()) == (h - 1) * leaves
    assert sorted(e.find(f"{SVG}title").text for e in links) == expected


def test_scheduler_counts():
    tree = FatTree(3, 4)
    drawing = draw("scheduler", {"levels": 3, "w": 4, "memory": "auto"})
    assert len(elements(drawing.svg, "router")) == 3 * tree.num_switches == drawing.routers
    assert len(elements(drawing.svg, "link")) == len(tree.up_links()) == drawing.links
    assert len(elements(drawing.svg, "leaf")) == tree.num_nodes == drawing.leaves
    # One dashed router node per group of w**h switches sharing digits >= h, h >= 1.
    assert len(elements(drawing.svg, "router-node")) == 16 // 4 + 16 // 16


@pytest.mark.parametrize("leaves, w", [(2, None), (16, None), (64, 20), (256, 41)])
def test_leiserson_capacities_are_the_labels(leaves, w):
    svg = draw_leiserson(TreeLayout.universal(leaves, w)).svg
    caps = universal_capacities(leaves, w)
    channels = elements(svg, "channel")
    labels = elements(svg, "capacity")
    assert len(channels) == len(labels) == 2 * leaves - 1
    assert len(elements(svg, "router")) == leaves - 1
    assert len(elements(svg, "leaf")) == leaves
    for label in labels:
        assert int(label.text) == caps[int(label.get("data-level"))]
    # Wider channels for more capacity.
    width = {int(c.get("data-level")): float(c.get("stroke-width")) for c in channels}
    assert all(width[k] >= width[k + 1] for k in range(len(caps) - 1))
    assert width[0] > width[len(caps) - 1] or len(set(caps)) == 1


def test_leiserson_w_zero_is_n():
    assert draw("leiserson-tree", {"leaves": 8, "w": 0, "seed": 0}).svg == (
        draw_leiserson(TreeLayout.universal(8)).svg
    )


@pytest.mark.parametrize(
    "design, params, message",
    [
        (
            "selector",
            {"width": 8},
            "design selector is a single block: there is no network to draw; "
            "networks: circuit-tree, circuit-tree-paper, leiserson-tree, scheduler",
        ),
        (
            "circuit-router",
            {"width": 8, "seed": 1},
            "design circuit-router is a single block: there is no network to draw; "
            "networks: circuit-tree, circuit-tree-paper, leiserson-tree, scheduler",
        ),
        (
            "circuit-tree-paper",
            {"leaves": 512},
            f"cannot draw FT(9, 2): 512 leaves, more than the {MAX_LEAVES} a drawing shows",
        ),
        (
            "scheduler",
            {"levels": 3, "w": 8},
            f"cannot draw FT(3, 8): 512 leaves, more than the {MAX_LEAVES} a drawing shows",
        ),
    ],
)
def test_errors(design, params, message):
    with pytest.raises(ValueError) as info:
        draw(design, params)
    assert str(info.value) == message


def test_fat_tree_of_one_switch():
    drawing = draw_fat_tree(FatTree(1, 4), "one switch")
    assert (drawing.leaves, drawing.routers, drawing.links) == (4, 1, 0)
    ET.fromstring(drawing.svg)


def test_cli_writes_svg_and_json(capsys, tmp_path):
    target = tmp_path / "ct.svg"
    code, out, _ = run(
        capsys, "draw", "circuit-tree-paper", "-p", "leaves=8", "-o", str(target), "--json"
    )
    assert code == 0
    data = json.loads(out)
    assert data["path"] == str(target)
    assert (data["leaves"], data["routers"], data["links"]) == (8, 12, 16)
    root = ET.parse(target).getroot()
    assert root.tag == f"{SVG}svg"


def test_cli_default_path(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "draw", "leiserson-tree", "-p", "leaves=4")
    assert code == 0
    path = tmp_path / "build/draw/leiserson-tree/leaves4-seed0-start_lead2-w0.svg"
    assert path.is_file() and str(path.relative_to(tmp_path)) in out


def test_cli_to_stdout(capsys):
    code, out, _ = run(capsys, "draw", "scheduler", "-p", "levels=2", "-p", "w=2", "-o", "-")
    assert code == 0
    assert len(elements(out, "link")) == len(FatTree(2, 2).up_links())


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["draw", "selector"],
            "design selector is a single block: there is no network to draw; "
            "networks: circuit-tree, circuit-tree-paper, leiserson-tree, scheduler",
        ),
        (["draw", "nosuch"], "unknown design 'nosuch'"),
        (
            ["draw", "circuit-tree-paper", "-p", "leaves=12"],
            "leaves must be a power of two of at least 2, not 12",
        ),
        (
            ["draw", "circuit-tree-paper", "-o", "x.png"],
            "draw writes SVG: -o must name a .svg file or '-', not 'x.png'",
        ),
        (
            ["draw", "circuit-tree-paper", "-o", "-", "--json"],
            "--json and -o - would both write to stdout; give -o FILE.svg",
        ),
        (
            ["draw", "leiserson-tree", "-p", "w=3"],
            "root capacity w must satisfy n^(2/3) <= w <= n, i.e. 7 <= w <= 16 for n = 16 leaves, "
            "not 3",
        ),
    ],
)
def test_cli_errors(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith(f"fattree draw: error: {message}") and err.count("\n") == 1
