"""Leiserson (1985) sections IV and V: the volume of universal fat-trees, decomposition trees.

* ``leiserson-volume``: the volume of a universal fat-tree on n processors with root capacity
  w (the capacities of :func:`fattree.spec.capacities.universal_capacities`, the same rule the
  hardware uses) in an explicit three-dimensional layout built from Lemma 3, beside Theorem
  4's ``(w lg(n/w))^(3/2)``, the range ``n lg n .. n^(3/2)`` of the Remark after it, and the
  root capacity the Definition of a "universal fat-tree of volume v" gives back.
* ``decomposition-trees``: Theorem 5's cutting-plane trees of meshes, a tree network,
  hypercubes and random graphs, Theorem 8's balanced trees made from them, and every
  level's measured bandwidth beside the bounds of Theorems 5 and 8 and Corollary 9.
* ``theorem8-search``: a hill-climbing search over small graphs and trees for the balanced
  set whose bandwidth comes closest to Theorem 8's ``4 sum_{k>=i} w_k`` (it reaches it).

The paper gives no constants for Lemma 3 or Theorem 4 (the volume bound is "essentially" the
Leighton-Rosenberg layout, not given). The layout below is ours, with constants derived from
the constructions the proof of Lemma 3 names (docs/leiserson.md, "Decomposition trees and
volume"):

* **Lemma 3** with m two-terminal nets: sources on a ``k x k`` array (``k = ceil(sqrt m)``)
  at pitch 2 on the bottom face, ends on the top face; three stages of k crossbars each
  route a row, a column and a row permutation (any permutation of a k x k array is such a
  product: Clos/Benes rearrangeability, König's theorem). A crossbar of k wires is a plane 2
  cells thick (one layer for the vertical runs, entry and exit columns interleaved, one for
  the horizontal runs), one track per wire: the box is ``2k x 2k x (3k + 1)``, built cell by
  cell by :func:`route_permutation`. Thompson's flattening for h >= 2 (derived, not built):
  slices of height h, each spread by h in both directions and redrawn in 2 layers: ``2hk x
  2hk x 2 ceil((3k + 1)/h)``.
* **A node** at level k has the nets of its switches: its external wires (``2 cap(k) + 4
  cap(k+1)``, both directions), two branch wires per selector and one per concentrator edge
  (:func:`fattree.spec.capacities.node_components`).
* **The tree**: a processor is a unit cube. A node's two subtree boxes sit side by side along
  an axis other than the one their own node split (so each child's node slab, which spans its
  box's cross-section, meets the parent's slab: the child's channel leaves through that
  edge), the smaller of those two; between them a slab spanning the cross-section holds the
  node's Lemma 3 box flattened with the largest h whose footprint fits (the cross-section is
  padded when even h = 1 does not fit).
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass
from fractions import Fraction

from ...spec.capacities import ceil_cbrt, node_components, universal_capacities
from ...spec.decomposition import (
    alpha_width,
    balance,
    binary_tree_network,
    corollary9_bound,
    cube_bits,
    cutting_plane_tree,
    hypercube_graph,
    mesh,
    random_graph,
    random_mesh_subgraph,
    theorem5_bound,
    theorem8_bound,
)
from . import Experiment, Result, counted, lg_sizes, positive_int

__all__ = [
    "EXPERIMENTS",
    "MAX_LG",
    "lemma3_box",
    "route_permutation",
    "node_nets",
    "root_capacity",
    "lg_plus",
    "Layout",
    "layout",
    "FAMILIES",
]

#: Largest lg n of ``leiserson-volume`` (exact integers throughout; a row is microseconds).
MAX_LG = 60
_sizes = lg_sizes(4, MAX_LG)


# -- the volume model --------------------------------------------------------------------------


def lemma3_box(m: int, h: int = 1) -> tuple[int, int, int]:
    """Our Lemma 3 box for ``m`` nets flattened by ``h``, ``k = ceil(sqrt(m))``: the box of
    :func:`route_permutation`, ``(2k, 2k, 3k + 1)``, for h = 1; for h >= 2 Thompson's
    flattening of it, ``(2hk, 2hk, 2 ceil((3k + 1)/h))`` (derived, not built)."""
    if m < 1 or h < 1:
        raise ValueError(f"m and h must be positive, not m={m!r}, h={h!r}")
    k = math.isqrt(m - 1) + 1
    height = 3 * k + 1 if h == 1 else 2 * -(-(3 * k + 1) // h)
    return 2 * h * k, 2 * h * k, height


def _perfect_matching(count: list[list[int]]) -> list[int]:
    """A perfect matching of the regular bipartite multigraph ``count`` (Kuhn's augmenting
    paths): ``match[row] = column``."""
    k = len(count)
    owner = [-1] * k

    def augment(row, seen):
        for col in range(k):
            if count[row][col] and not seen[col]:
                seen[col] = True
                if owner[col] < 0 or augment(owner[col], seen):
                    owner[col] = row
                    return True
        return False

    for row in range(k):
        if not augment(row, [False] * k):
            raise AssertionError("unreachable: a regular bipartite graph has a perfect matching")
    match = [0] * k
    for col, row in enumerate(owner):
        match[row] = col
    return match


def _step_to(path: list, cell: tuple[int, int, int]) -> None:
    """Extend ``path`` to ``cell`` in unit steps, one axis at a time (x, then y, then z)."""
    x, y, z = path[-1]
    while (x, y, z) != cell:
        if x != cell[0]:
            x += 1 if cell[0] > x else -1
        elif y != cell[1]:
            y += 1 if cell[1] > y else -1
        else:
            z += 1 if cell[2] > z else -1
        path.append((x, y, z))


def route_permutation(perm) -> list[list[tuple[int, int, int]]]:
    """Lemma 3's wiring, built: the path (unit steps through lattice cells) of each of the
    ``k^2`` wires of a permutation ``perm`` of a ``k x k`` terminal array, in a ``2k x 2k x
    (3k + 1)`` box. Terminal ``i = (row, col)`` starts at ``(2 col, 2 row, 0)`` on the bottom
    face; wire i ends at terminal ``perm[i] = (row', col')``'s cell ``(2 col', 2 row' + 1,
    3k)`` on the top face.

    Three stages of k tracks each (z = 0 .. k-1, k .. 2k-1, 2k .. 3k-1): within rows (to a
    middle column), within columns (to the target row), within rows (to the target column),
    the Clos decomposition, with middle columns from k perfect matchings of the rows' demands
    (König). Each stage is k crossbar planes, two cells thick: one layer for the vertical runs
    (entries and exits in interleaved columns) and one for the horizontal runs, one track
    (height) per wire.
    """
    perm = list(perm)
    k = math.isqrt(len(perm))
    if k * k != len(perm) or sorted(perm) != list(range(len(perm))):
        raise ValueError(f"perm must be a permutation of k^2 terminals, not {perm!r}")
    src = [(i // k, i % k) for i in range(k * k)]
    dst = [(p // k, p % k) for p in perm]
    # Middle columns: colour the row -> target-row demands with k perfect matchings.
    count = [[0] * k for _ in range(k)]
    for i in range(k * k):
        count[src[i][0]][dst[i][0]] += 1
    waiting = {}
    for i in range(k * k):
        waiting.setdefault((src[i][0], dst[i][0]), []).append(i)
    middle = [0] * (k * k)
    for colour in range(k):
        for row, target in enumerate(_perfect_matching(count)):
            count[row][target] -= 1
            middle[waiting[(row, target)].pop()] = colour
    paths = []
    for i in range(k * k):
        (row, col), (row2, col2), mid = src[i], dst[i], middle[i]
        path = [(2 * col, 2 * row, 0)]

        # Stage 1, the plane of row `row`: verticals at y = 2 row, horizontals at 2 row + 1.
        z = col
        _step_to(path, (2 * col, 2 * row, z))
        _step_to(path, (2 * col, 2 * row + 1, z))
        _step_to(path, (2 * mid + 1, 2 * row + 1, z))
        _step_to(path, (2 * mid + 1, 2 * row, z))
        # Stage 2, the plane of column `mid`: verticals at x = 2 mid + 1, horizontals at 2 mid.
        z = k + row
        _step_to(path, (2 * mid + 1, 2 * row, z))
        _step_to(path, (2 * mid, 2 * row, z))
        _step_to(path, (2 * mid, 2 * row2 + 1, z))
        _step_to(path, (2 * mid + 1, 2 * row2 + 1, z))
        # Stage 3, the plane of row `row2`: verticals at y = 2 row2 + 1, horizontals at 2 row2.
        z = 2 * k + mid
        _step_to(path, (2 * mid + 1, 2 * row2 + 1, z))
        _step_to(path, (2 * mid + 1, 2 * row2, z))
        _step_to(path, (2 * col2, 2 * row2, z))
        _step_to(path, (2 * col2, 2 * row2 + 1, z))
        _step_to(path, (2 * col2, 2 * row2 + 1, 3 * k))
        paths.append(path)
    return paths


def node_nets(capacities, level: int) -> int:
    """Two-terminal nets of one node at ``level``: external wires, selector branches,
    concentrator edges."""
    parts = node_components(capacities, level)
    external = 2 * capacities[level] + 4 * capacities[level + 1]
    return external + 2 * parts["selectors"] + parts["crosspoints"]


def lg_plus(x) -> float:
    """``max(1, lg x)``: Theorem 4's lg(n/w) is 0 at w = n, where the volume is not."""
    return max(1.0, math.log2(x))


def root_capacity(n: int, exponent: Fraction) -> int:
    """``ceil(n^exponent)`` as an exact integer, kept in Theorem 4's range n^(2/3) .. n."""
    p, q = exponent.numerator, exponent.denominator
    target = n**p
    w = max(1, round(n ** float(exponent)))
    while w**q < target:
        w += 1
    while w > 1 and (w - 1) ** q >= target:
        w -= 1
    return min(n, max(ceil_cbrt(n * n), w))


@dataclass(frozen=True)
class Layout:
    """The layout of one universal fat-tree: the box of each level's subtree (root first),
    the axis each node splits, each node's slab (thickness, h) and nets."""

    n: int
    w: int
    capacities: tuple[int, ...]
    boxes: tuple[tuple[int, int, int], ...]
    axes: tuple[int, ...]
    slabs: tuple[tuple[int, int], ...]
    nets: tuple[int, ...]
    components: int

    @property
    def volume(self) -> int:
        return math.prod(self.boxes[0])


def layout(n: int, w: int) -> Layout:
    """The layout of the universal fat-tree on n processors with root capacity w."""
    caps = universal_capacities(n, w)
    levels = len(caps) - 1
    box, axis = (1, 1, 1), -1
    boxes, axes, slabs, nets = [box], [], [], []
    components = n  # the processors
    for k in range(levels - 1, -1, -1):
        m = node_nets(caps, k)
        components += (1 << k) * sum(node_components(caps, k).values())
        others = [a for a in range(3) if a != axis]
        axis = min(others, key=lambda a: (box[a], a))
        cross = [a for a in range(3) if a != axis]
        side = lemma3_box(m)[0]
        h = max(1, min(box[a] for a in cross) // side)
        foot, _, thick = lemma3_box(m, h)
        new = list(box)
        for a in cross:
            new[a] = max(box[a], foot)
        new[axis] = 2 * box[axis] + thick
        box = tuple(new)
        boxes.append(box)
        axes.append(axis)
        slabs.append((thick, h))
        nets.append(m)
    return Layout(
        n,
        w,
        caps,
        tuple(reversed(boxes)),
        tuple(reversed(axes)),
        tuple(reversed(slabs)),
        tuple(reversed(nets)),
        components,
    )


# -- leiserson-volume --------------------------------------------------------------------------


def _exponents(text: str) -> list[Fraction]:
    try:
        values = [Fraction(x) for x in text.split(",")]
    except (ValueError, ZeroDivisionError):
        values = []
    if not values or any(not Fraction(2, 3) <= v <= 1 for v in values):
        raise argparse.ArgumentTypeError(
            f"expected exponents e of w = n^e in 2/3 .. 1 (a comma list such as 2/3,5/6,1), "
            f"not {text!r}"
        )
    return values


def _v_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=_sizes,
        default=_sizes("6,8,10,12,16,20,24,30,40,50,60"),
        metavar="LGN",
        help=f"lg n values, A..B or comma list, 4..{MAX_LG} (default 6,8,...,60)",
    )
    p.add_argument(
        "--exponents",
        type=_exponents,
        default=_exponents("2/3,3/4,5/6,1"),
        metavar="LIST",
        help="root capacities w = ceil(n^e), e in 2/3..1 (default 2/3,3/4,5/6,1)",
    )
    p.add_argument("--per-level", action="store_true", help="one row per node level as well")


def _v_run(args, progress) -> Result:
    rows, start = [], time.process_time()
    for lgn in counted(progress, args.sizes):
        n = 1 << lgn
        for e in args.exponents:
            w = root_capacity(n, e)
            lay = layout(n, w)
            v = lay.volume
            thm4 = (w * lg_plus(n / w)) ** 1.5
            comps = n * lg_plus(w**3 / n**2)
            thick, h = lay.slabs[0]
            rows.append(
                [
                    n,
                    str(e),
                    w,
                    "tree",
                    w,
                    lay.nets[0],
                    thick,
                    h,
                    "x".join(map(str, lay.boxes[0])),
                    v,
                    v / thm4,
                    v / w**1.5,
                    v / (n * lgn),
                    v / n**1.5,
                    lay.components / comps,
                ]
            )
            if args.per_level:
                for k in range(1, lgn):
                    thick, h = lay.slabs[k]
                    rows.append(
                        [
                            n,
                            str(e),
                            w,
                            f"level {k}",
                            lay.capacities[k],
                            lay.nets[k],
                            thick,
                            h,
                            "x".join(map(str, lay.boxes[k])),
                            math.prod(lay.boxes[k]),
                            None,
                            None,
                            None,
                            None,
                            None,
                        ]
                    )
        progress(f"n=2^{lgn}")
    return Result(
        "leiserson-volume",
        {"sizes": args.sizes, "exponents": [str(e) for e in args.exponents]},
        [
            "n",
            "e",
            "w",
            "scope",
            "cap",
            "nets",
            "slab",
            "h",
            "box",
            "volume",
            "v/(w lg(n/w))^1.5",
            "v/w^1.5",
            "v/(n lg n)",
            "v/n^1.5",
            "comp/(n lg(w^3/n^2))",
        ],
        rows,
        notes=[
            "w = ceil(n^e); capacities cap(k) = min(ceil(n/2^k), ceil(w/2^(2k/3))) "
            "(fattree.spec.capacities)",
            "volume: our layout from Lemma 3 (box 2k x 2k x (3k+1) for m <= k^2 nets, Thompson "
            "flattening for h >= 2), in unit cells; the paper gives no constants",
            "Theorem 4: v = O((w lg(n/w))^(3/2)), components O(n lg(w^3/n^2)); lg taken as at "
            "least 1 (both are 0 at an end of the range)",
            "Remark after Theorem 4: a universal fat-tree of volume v has v = Omega(n lg n) and "
            "v = O(n^(3/2)); 'tree' rows: the root node's cap, nets, slab and h",
            f"CPU {time.process_time() - start:.2f} s",
        ],
    )


def _v_plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    fig, (ax, rx) = plt.subplots(1, 2, figsize=(11, 4.5))
    tree = [r for r in result.rows if r[3] == "tree"]
    for e in dict.fromkeys(r[1] for r in tree):
        rows = [r for r in tree if r[1] == e]
        ax.plot([r[0] for r in rows], [r[9] for r in rows], "o-", label=f"model, w = n^{e}")
        rx.plot([r[0] for r in rows], [r[10] for r in rows], "o-", label=f"w = n^{e}")
    ns = sorted({r[0] for r in tree})
    ax.plot(ns, [n * math.log2(n) for n in ns], "k--", label="n lg n")
    ax.plot(ns, [n * (math.log2(n) / 3) ** 1.5 for n in ns], "k-.", label="n (lg n / 3)^1.5")
    ax.plot(ns, [n**1.5 for n in ns], "k:", label="n^1.5")
    for a in (ax, rx):
        a.set_xscale("log", base=2)
        a.set_xlabel("processors n")
        a.legend(fontsize="small")
    ax.set_yscale("log", base=2)
    ax.set_ylabel("volume (unit cells)")
    rx.set_ylabel("volume / (w lg(n/w))^1.5  (Theorem 4)")
    rx.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path)


# -- decomposition-trees -----------------------------------------------------------------------

#: family -> (builder from a target n and a seed, whether wires are unit lattice edges, so
#: Theorem 5 holds with gamma = 1)
FAMILIES = {
    "mesh3d": (lambda n, s: mesh((round(n ** (1 / 3)),) * 3), True),
    "grid2d": (lambda n, s: mesh((math.isqrt(n),) * 2), True),
    "mesh-subgraph": (
        lambda n, s: random_mesh_subgraph(max(2, round((2 * n) ** (1 / 3))), 0.7, 0.5, s),
        True,
    ),
    "tree": (lambda n, s: binary_tree_network(1 << max(0, n.bit_length() - 1)), False),
    "hypercube": (lambda n, s: hypercube_graph(max(0, n.bit_length() - 1)), False),
    "random": (lambda n, s: random_graph(n, 4.0, s), False),
}
MAX_N = 4096


def _families(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",")]
    if not names or any(x not in FAMILIES for x in names):
        raise argparse.ArgumentTypeError(
            f"expected a comma list of {', '.join(FAMILIES)}, not {text!r}"
        )
    return names


def _n(text: str) -> int:
    value = positive_int(text)
    if not 2 <= value <= MAX_N:
        raise argparse.ArgumentTypeError(f"expected n in 2..{MAX_N}, not {text!r}")
    return value


def _alpha(text: str) -> float:
    try:
        value = float(Fraction(text)) if "/" in text else float(text)
    except (ValueError, ZeroDivisionError):
        value = math.nan
    if not 1 < value <= 2:
        raise argparse.ArgumentTypeError(f"expected alpha with 1 < alpha <= 2, not {text!r}")
    return value


def _d_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--families",
        type=_families,
        default=list(FAMILIES),
        metavar="LIST",
        help=f"graph families (default all: {','.join(FAMILIES)})",
    )
    p.add_argument(
        "--n", type=_n, default=256, help=f"about how many processors, 2..{MAX_N} (default 256)"
    )
    p.add_argument("--seed", type=int, default=1, help="seed of the random families")
    p.add_argument(
        "--alpha",
        type=_alpha,
        default=4 ** (1 / 3),
        help="alpha of Corollary 9's (w, alpha) fit (default 4^(1/3), Theorem 5's)",
    )


def _d_run(args, progress) -> Result:
    if args.seed < 0:
        raise ValueError(f"--seed must be non-negative, not {args.seed}")
    rows, start = [], time.process_time()
    for family in counted(progress, args.families):
        build, unit = FAMILIES[family]
        graph = build(args.n, args.seed)
        tree = cutting_plane_tree(graph)
        bal = balance(tree)
        widths, measured = tree.widths(), bal.widths()
        thm8 = theorem8_bound(widths, bal.depth)
        w = alpha_width(widths, args.alpha)
        cor9 = corollary9_bound(w, args.alpha, bal.depth)
        thm5 = theorem5_bound(8 ** cube_bits(graph), tree.depth) if unit else None
        for i in range(bal.depth + 1):
            sizes = bal.level_sizes(i)
            rows.append(
                [
                    family,
                    graph.n,
                    i,
                    widths[i],
                    round(thm5[i], 2) if thm5 else None,
                    int(tree.level_sizes(i).max()),
                    measured[i],
                    max(bal.forest_sums(i)),
                    thm8[i],
                    round(cor9[i], 2),
                    f"{int(sizes.min())}..{int(sizes.max())}",
                    bal.cuts[i - 1] if i else 0,
                ]
            )
        progress(f"{family}: T depth {tree.depth}, T' depth {bal.depth}")
    return Result(
        "decomposition-trees",
        {"families": args.families, "n": args.n, "seed": args.seed, "alpha": args.alpha},
        [
            "family",
            "n",
            "level",
            "w_i (T)",
            "Thm 5",
            "largest set (T)",
            "w'_i (T')",
            "forest sum",
            "Thm 8: 4 sum w_k",
            "Cor 9",
            "sizes (T')",
            "Lemma 6 cuts",
        ],
        rows,
        notes=[
            "T: Theorem 5's cutting planes (x, y, z in turn through the middle of each box) on "
            "the graph's lattice layout, stopped when each box holds at most one processor",
            "T': Theorem 8, Lemma 6 applied recursively to T's leaf line; w'_i measured as the "
            "edges leaving each set; forest sum: Lemma 7's subtree roots' bandwidths in T",
            "Thm 5: 4 * 4^(1/3) * (v/2^i)^(2/3) with gamma = 1 (unit lattice wires only); "
            f"Cor 9: (4 alpha/(alpha-1) w, alpha) with alpha = {args.alpha:.4g}, w the least "
            "with w_k <= w/alpha^k",
            f"CPU {time.process_time() - start:.2f} s",
        ],
    )


def _d_plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    families = list(dict.fromkeys(r[0] for r in result.rows))
    fig, axes = plt.subplots(1, len(families), figsize=(3 * len(families), 3.4), squeeze=False)
    for ax, family in zip(axes[0], families, strict=True):
        rows = [r for r in result.rows if r[0] == family]
        levels = [r[2] for r in rows]
        ax.plot(levels, [max(r[6], 0.5) for r in rows], "o-", label="w'_i measured")
        ax.plot(levels, [max(r[3], 0.5) for r in rows], "s:", label="w_i of T")
        ax.plot(levels, [r[8] for r in rows], "k--", label="Thm 8")
        ax.plot(levels, [r[9] for r in rows], "k:", label="Cor 9")
        ax.set_yscale("log")
        ax.set_title(f"{family} (n={rows[0][1]})", fontsize="small")
        ax.set_xlabel("level i")
    axes[0][0].set_ylabel("bandwidth (edges)")
    axes[0][0].legend(fontsize="x-small")
    fig.tight_layout()
    fig.savefig(path)


# -- theorem8-search ---------------------------------------------------------------------------


def _t_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--processors", type=_n, default=8, help="processors n, 2..4096 (default 8)")
    p.add_argument("--depth", type=positive_int, default=4, help="depth r of T (default 4)")
    p.add_argument(
        "--vertices", type=positive_int, default=24, help="vertices, processors first (default 24)"
    )
    p.add_argument("--steps", type=positive_int, default=3000, help="search steps (default 3000)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _tightness(tree) -> tuple[float, object]:
    bal = balance(tree)
    bound = theorem8_bound(tree.widths(), bal.depth)
    measured = bal.widths()
    # The last level is left out: there a balanced T gives 1/4 trivially (w'_r = w_r).
    ratios = [measured[i] / bound[i] for i in range(1, bal.depth) if bound[i]]
    return max(ratios, default=0.0), bal


def _t_run(args, progress) -> Result:
    import random

    from ...spec.decomposition import MAX_DEPTH, DecompositionTree, Graph

    n, r, vertices = args.processors, args.depth, args.vertices
    if not (n - 1).bit_length() <= r <= min(MAX_DEPTH, 16):
        raise ValueError(f"--depth must be in lg n .. 16 for {n} processors, not {r}")
    if not n <= vertices <= 4096:
        raise ValueError(f"--vertices must be in n .. 4096 (n = {n}), not {vertices}")
    if args.steps > 10**6 or args.seed < 0:
        raise ValueError(f"--steps must be at most 10^6 and --seed non-negative, not {args.steps}")
    progress(f"searching {args.steps} steps")
    rng = random.Random(args.seed)
    start = time.process_time()
    pair = lambda: tuple(rng.sample(range(vertices), 2))  # noqa: E731
    leaf_of = rng.sample(range(1 << r), n) + [rng.randrange(1 << r) for _ in range(vertices - n)]
    edges = [pair() for _ in range(2 * vertices)]

    def make(leaf_of, edges):
        graph = Graph(vertices, tuple(edges), tuple(range(n)))
        return DecompositionTree(graph, r, tuple(leaf_of))

    best, _ = _tightness(make(leaf_of, edges))
    for _step in range(args.steps):
        # Hill climbing: move one edge or vertex, add or drop an edge; keep if not worse.
        lo, ed, move = list(leaf_of), list(edges), rng.random()
        if move < 0.4:
            ed[rng.randrange(len(ed))] = pair()
        elif move < 0.55:
            ed.append(pair())
        elif move < 0.7 and len(ed) > 1:
            ed.pop(rng.randrange(len(ed)))
        else:
            v, leaf = rng.randrange(vertices), rng.randrange(1 << r)
            if v < n and leaf in lo[:n]:
                continue
            lo[v] = leaf
        ratio, _ = _tightness(make(lo, ed))
        if ratio >= best:
            best, leaf_of, edges = ratio, lo, ed
    tree = make(leaf_of, edges)
    _, bal = _tightness(tree)
    widths, measured = tree.widths(), bal.widths()
    bound = theorem8_bound(widths, bal.depth)
    rows = [
        [i, widths[i], measured[i], bound[i], measured[i] / bound[i] if bound[i] else None]
        for i in range(bal.depth + 1)
    ]
    return Result(
        "theorem8-search",
        {k: getattr(args, k) for k in ("processors", "depth", "vertices", "steps", "seed")},
        ["level", "w_i (T)", "w'_i (T')", "4 sum_{k>=i} w_k", "ratio"],
        rows,
        notes=[
            f"largest w'_i / (4 sum w_k) found, levels 1 .. depth-1: {best:.4g}",
            "instance: leaf of each vertex (processors first) and edges in the JSON",
            f"CPU {time.process_time() - start:.2f} s",
        ],
        extra={"leaf_of": list(leaf_of), "edges": [list(e) for e in edges], "best": best},
    )


EXPERIMENTS = [
    Experiment(
        "leiserson-volume",
        "Leiserson Lemma 3 / Theorem 4: volume of universal fat-trees against n and w",
        _v_args,
        _v_run,
        _v_plot,
    ),
    Experiment(
        "theorem8-search",
        "Leiserson Theorem 8: search small graphs and trees for w'_i close to 4 sum w_k",
        _t_args,
        _t_run,
    ),
    Experiment(
        "decomposition-trees",
        "Leiserson Theorems 5, 8, Corollary 9: decomposition trees and their balanced forms",
        _d_args,
        _d_run,
        _d_plot,
    ),
]
