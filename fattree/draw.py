"""Pictures of the networks as self-contained SVG, drawn from the definitions (fattree.spec).

``fattree draw DESIGN`` calls :func:`draw`. Only the definitions are read, never the HDL, so
the picture shows the wiring the hardware and the models are both built from. Plain SVG text,
no plotting library: it works with a bare ``pip install``.

Every drawn object carries a ``class`` (``leaf``, ``router``, ``link``, ``leaf-link``,
``router-node``, ``channel``, ``capacity``) so tests and style sheets can find it.
"""

from __future__ import annotations

from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from .designs import DESIGNS
from .params import check_power_of_two
from .registry import resolve
from .spec.capacities import TreeLayout
from .spec.topology import FatTree

__all__ = [
    "Drawing",
    "DRAWABLE",
    "MAX_LEAVES",
    "draw",
    "draw_fat_tree",
    "draw_leiserson",
    "circuit_tree_picture",
    "scheduler_picture",
    "leiserson_tree_picture",
]

#: More leaves than this make a picture nobody can read; we refuse rather than elide.
MAX_LEAVES = 256

LEAF_DX = 24  # horizontal room per leaf
LEVEL_DY = 96  # vertical room per level
MARGIN_LEFT = 96  # room for the level labels
MARGIN = 24
TITLE_DY = 40

_STYLE = """
text { font-family: sans-serif; font-size: 11px; fill: #222; }
.title { font-size: 14px; font-weight: bold; }
.level { font-size: 12px; fill: #555; }
.leaf { fill: #4a90d9; stroke: #1c4f80; }
.router { fill: #f5c26b; stroke: #8a5a00; }
.router-node { fill: none; stroke: #999; stroke-dasharray: 4 3; }
.link, .leaf-link { stroke: #555; stroke-width: 1; fill: none; }
.channel { stroke: #3a6ea5; stroke-linecap: round; }
.capacity { font-weight: bold; text-anchor: middle; paint-order: stroke; stroke: white;
            stroke-width: 3px; }
.port { font-size: 9px; fill: #777; text-anchor: middle; }
""".strip()


@dataclass(frozen=True)
class Drawing:
    """An SVG picture and what is in it."""

    svg: str
    leaves: int
    routers: int
    #: Links between routers (fat tree) or channels (Leiserson tree, the root's included).
    links: int


class _Svg:
    """A few SVG elements as text; coordinates rounded so the file stays small."""

    def __init__(self, width: float, height: float, title: str):
        self.width, self.height = width, height
        self.body = [f'<text class="title" x="{MARGIN}" y="{MARGIN + 4}">{escape(title)}</text>']
        self.title = title

    def add(self, tag: str, cls: str, tip: str | None = None, text: str | None = None, **attrs):
        parts = [f"<{tag} class={quoteattr(cls)}"]
        for name, value in attrs.items():
            value = f"{value:.1f}".rstrip("0").rstrip(".") if isinstance(value, float) else value
            parts.append(f" {name.replace('_', '-')}={quoteattr(str(value))}")
        inner = (f"<title>{escape(tip)}</title>" if tip else "") + escape(text or "")
        self.body.append("".join(parts) + (f">{inner}</{tag}>" if inner else "/>"))

    def text(self, cls: str, x: float, y: float, text: str, **attrs) -> None:
        self.add("text", cls, None, text, x=float(x), y=float(y), **attrs)

    def __str__(self) -> str:
        w, h = round(self.width), round(self.height)
        return "\n".join(
            [
                '<?xml version="1.0" encoding="UTF-8"?>',
                f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
                f'viewBox="0 0 {w} {h}">',
                f"<title>{escape(self.title)}</title>",
                f"<style>\n{_STYLE}\n</style>",
                f'<rect x="0" y="0" width="{w}" height="{h}" fill="white"/>',
                *self.body,
                "</svg>",
                "",
            ]
        )


def _check_size(name: str, leaves: int) -> None:
    if leaves > MAX_LEAVES:
        raise ValueError(
            f"cannot draw {name}: {leaves} leaves, more than the {MAX_LEAVES} a drawing shows"
        )


def draw_fat_tree(tree: FatTree, title: str) -> Drawing:
    """FT(l, w): nodes at the bottom, ``l`` levels of switches, every up link.

    Switch ``SW(h, t)`` is drawn in column ``t`` on every level, so the ``w**h`` switches of
    one router node (same digits ``>= h``) stand side by side in a dashed box.
    """
    _check_size(f"FT({tree.levels}, {tree.w})", tree.num_nodes)
    w, levels = tree.w, tree.levels
    col = w * LEAF_DX  # room per switch column
    box_w, box_h = col - 8, 18
    width = MARGIN_LEFT + tree.num_switches * col + MARGIN
    leaf_y = TITLE_DY + levels * LEVEL_DY + 20
    height = leaf_y + 40

    def switch_x(t: int) -> float:
        return MARGIN_LEFT + t * col + 4

    def switch_y(h: int) -> float:
        return leaf_y - 50 - h * LEVEL_DY

    def port_x(t: int, p: int) -> float:
        return switch_x(t) + (p + 0.5) * box_w / w

    svg = _Svg(width, height, title)
    for h in range(levels):
        y = switch_y(h)
        per_node = w**h  # switches in one router node at this level
        svg.text("level", MARGIN, y + 13, f"level {h}")
        if per_node > 1:
            for first in range(0, tree.num_switches, per_node):
                svg.add(
                    "rect",
                    "router-node",
                    f"router node: SW({h}, {first}..{first + per_node - 1})",
                    x=switch_x(first) - 3.0,
                    y=y - 5.0,
                    width=per_node * col - 2.0,
                    height=box_h + 10.0,
                )
        for t in tree.switches(h):
            svg.add(
                "rect", "router", f"SW({h}, {t})", x=switch_x(t), y=y, width=box_w, height=box_h
            )
    # Up links: port p on top of SW(h, t) to its down port on the bottom of the parent.
    links = 0
    for link in tree.up_links():
        h, t, p = link.level, link.switch, link.port
        _, parent, down = tree.up_neighbour(h, t, p)
        svg.add(
            "line",
            "link",
            f"SW({h}, {t}) up {p} - SW({h + 1}, {parent}) down {down}",
            x1=port_x(t, p),
            y1=switch_y(h),
            x2=port_x(parent, down),
            y2=switch_y(h + 1) + float(box_h),
        )
        links += 1
    svg.text("level", MARGIN, leaf_y + 4, "nodes")
    for node in tree.nodes():
        t, p = tree.node_switch(node)
        x = port_x(t, p)
        svg.add("line", "leaf-link", None, x1=x, y1=leaf_y, x2=x, y2=switch_y(0) + float(box_h))
        svg.add("circle", "leaf", f"node {node}", cx=x, cy=float(leaf_y), r=6)
        if tree.num_nodes <= 64:
            svg.text("port", x, leaf_y + 20, str(node))
    routers = levels * tree.num_switches
    return Drawing(str(svg), tree.num_nodes, routers, links)


def draw_leiserson(layout: TreeLayout) -> Drawing:
    """Leiserson's binary fat-tree: every channel drawn as wide as its capacity, labelled.

    Node ``v`` (heap numbering) at level ``k`` sits over the middle of its leaves; the
    channel above it has capacity ``cap(k)``, the root's leads to the external interface.
    """
    n, levels = layout.leaves, layout.levels
    _check_size(f"the Leiserson tree of {n} leaves", n)
    dx = max(LEAF_DX, 32)  # room for the labels near the leaves
    width = MARGIN_LEFT + n * dx + MARGIN
    top = TITLE_DY + 40  # the external interface
    height = top + (levels + 1) * LEVEL_DY + 20
    widest = max(layout.capacities)

    def position(v: int) -> tuple[float, float]:
        k = v.bit_length() - 1
        span = n >> k  # leaves under node v
        return MARGIN_LEFT + ((v - (1 << k)) + 0.5) * span * dx, top + (k + 1) * LEVEL_DY

    title = (
        f"leiserson-tree: {n} leaves, capacities {', '.join(map(str, layout.capacities))} "
        "(root first)"
    )
    svg = _Svg(width, height, title)
    for k in range(levels + 1):
        svg.text("level", MARGIN, top + (k + 1) * LEVEL_DY + 4, f"level {k}")
    svg.text("level", MARGIN, top + 4, "interface")
    for v in range(1, 2 * n):
        k = v.bit_length() - 1
        cap = layout.cap(k)
        x, y = position(v)
        px, py = position(v // 2) if v > 1 else (x, float(top))
        svg.add(
            "line",
            "channel",
            f"channel above node {v}: capacity {cap}",
            x1=x,
            y1=y,
            x2=px,
            y2=py,
            stroke_width=1 + 9 * cap / widest,
            data_level=k,
        )
    # Nodes and labels after the channels, so they are drawn on top.
    for v in range(1, 2 * n):
        k = v.bit_length() - 1
        x, y = position(v)
        px, py = position(v // 2) if v > 1 else (x, float(top))
        svg.text("capacity", (x + px) / 2, (y + py) / 2 + 4, str(layout.cap(k)), data_level=k)
        if v >= n:
            svg.add("rect", "leaf", f"leaf {v - n}", x=x - 7, y=y - 7, width=14, height=14)
        else:
            svg.add("circle", "router", f"node {v} (level {k})", cx=x, cy=y, r=9)
    return Drawing(str(svg), n, n - 1, 2 * n - 1)


def circuit_tree_picture(p: dict) -> Drawing:
    """The circuit tree (the paper's protocol) of the design parameters ``p``."""
    return _circuit_tree(p["leaves"], "circuit-tree-paper")


def circuit_tree_fast_picture(p: dict) -> Drawing:
    """The circuit tree that carries traffic: the same topology as the paper's."""
    return _circuit_tree(p["leaves"], "circuit-tree")


def scheduler_picture(p: dict) -> Drawing:
    """The scheduler's FT(l, w) of the design parameters ``p``."""
    return draw_fat_tree(
        FatTree(p["levels"], _scheduler_w(p)), f"scheduler: FT({p['levels']}, {p['w']})"
    )


def leiserson_tree_picture(p: dict) -> Drawing:
    """The universal fat-tree of the design parameters ``p``."""
    return draw_leiserson(TreeLayout.universal(p["leaves"], p["w"] or None))


#: Designs with a network to draw, and how (``"module:function"``, ``params -> Drawing``):
#: the design record's ``drawing``.
DRAWABLE = {name: design.drawing for name, design in DESIGNS.items() if design.drawing}


def _scheduler_w(p: dict) -> int:
    # The picture is of FT(l, w); FT(l, m, w) with m != w is refused, not drawn as FT(l, w).
    if p.get("m", "") not in ("", None, p["w"]):
        raise ValueError(
            f"the scheduler's picture is of FT(l, w) only; FT({p['levels']}, {p['m']}, "
            f"{p['w']}) (m != w) is not drawn yet"
        )
    return p["w"]


def _circuit_tree(leaves: int, name: str) -> Drawing:
    check_power_of_two("leaves", leaves, 2)
    h = leaves.bit_length() - 1
    return draw_fat_tree(
        FatTree(h, 2),
        f"{name}: {leaves} leaves, FT({h}, 2); a router node at level l is 2^l routers",
    )


def draw(design: str, params: dict[str, int | str]) -> Drawing:
    """The picture of design ``design`` with ``params`` (the design table's names).

    Raises
    ------
    ValueError
        for a single block (``selector``, ``circuit-router``): no network to draw; or a
        network of more than :data:`MAX_LEAVES` leaves.
    """
    if design not in DRAWABLE:
        raise ValueError(
            f"design {design} is a single block: there is no network to draw; "
            f"networks: {', '.join(sorted(DRAWABLE))}"
        )
    return resolve(DRAWABLE[design])(params)
