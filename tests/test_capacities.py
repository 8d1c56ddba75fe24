"""Universal fat-tree capacities (exact integers), user profiles, the node switch plan."""

import pytest

from fattree.spec.capacities import (
    TreeLayout,
    ceil_cbrt,
    check_capacity_profile,
    universal_capacities,
    universal_capacity,
)


def test_ceil_cbrt_exact():
    for x in range(0, 3000):
        c = ceil_cbrt(x)
        assert c**3 >= x and (c == 0 or (c - 1) ** 3 < x)
    big = 12345678901234567890**3
    assert ceil_cbrt(big) == 12345678901234567890
    assert ceil_cbrt(big + 1) == 12345678901234567891


def brute_cap(n, w, k):
    # Definition read literally: the least c >= n/2^k, and the least c with c >= w/2^(2k/3),
    # the latter as c^3 * 2^(2k) >= w^3; scanned, not computed.
    by_leaves = next(c for c in range(n + 1) if c * 2**k >= n)
    by_root = next(c for c in range(w + 1) if c**3 * 4**k >= w**3)
    return min(by_leaves, by_root)


@pytest.mark.parametrize("n", [2, 4, 8, 16, 64, 256, 1024])
def test_universal_capacities_match_definition(n):
    lo = ceil_cbrt(n * n)
    for w in sorted({lo, (lo + n) // 2, n}):
        caps = universal_capacities(n, w)
        assert caps == tuple(brute_cap(n, w, k) for k in range(n.bit_length()))
        assert caps[0] == w and caps[-1] == 1
        # Going down, capacities never grow and at most halve (rounded up).
        assert all(b <= a <= 2 * b for a, b in zip(caps, caps[1:], strict=False))


def test_known_profiles():
    assert universal_capacities(16) == (16, 8, 4, 2, 1)
    assert universal_capacities(64, 16) == (16, 11, 7, 4, 3, 2, 1)
    # Near the root the capacities grow by the cube root of 4 per level.
    assert universal_capacities(4096, 256)[:4] == (256, 162, 102, 64)
    assert universal_capacity(4096, 256, 1) == 162  # ceil(256 / 4^(1/3)) = ceil(161.27)


def test_root_capacity_bounds():
    assert universal_capacities(64, 16)[0] == 16
    with pytest.raises(
        ValueError,
        match=r"^root capacity w must satisfy n\^\(2/3\) <= w <= n, "
        r"i.e. 16 <= w <= 64 for n = 64 leaves, not 15$",
    ):
        universal_capacities(64, 15)
    with pytest.raises(ValueError, match=r"i.e. 16 <= w <= 64 for n = 64 leaves, not 65$"):
        universal_capacities(64, 65)
    with pytest.raises(ValueError, match=r"^leaves must be a power of two of at least 2, not 12$"):
        universal_capacities(12)
    with pytest.raises(TypeError, match=r"^w must be an integer, not 8.0$"):
        universal_capacities(16, 8.0)


def test_capacity_profile_validation():
    assert check_capacity_profile(8, [5, 4, 2, 1]) == (5, 4, 2, 1)
    message = (
        r"^capacities must be a list of 4 positive integers \(levels 0..3, root first\) "
        r"for 8 leaves, not "
    )
    with pytest.raises(ValueError, match=message + r"\[4, 2, 1\]$"):
        check_capacity_profile(8, [4, 2, 1])
    with pytest.raises(ValueError, match=message + r"\[4, 2, 0, 1\]$"):
        check_capacity_profile(8, [4, 2, 0, 1])
    with pytest.raises(ValueError, match=message + r"\[4, 2, True, 1\]$"):
        check_capacity_profile(8, [4, 2, True, 1])
    with pytest.raises(TypeError, match=r"^capacities must be a list of 4 positive integers, "):
        check_capacity_profile(8, 4)


def test_layout_switch_plan():
    layout = TreeLayout.universal(16)
    for level in range(layout.levels):
        for port in "ULR":
            cascade = layout.cascade(level, port)
            assert cascade.r == sum(layout.group_widths(level, port))
            assert cascade.s == layout.out_width(level, port)
            for stage in cascade.stages:
                assert stage.graph.input_degree <= 6 and stage.graph.output_degree <= 9
    # Root L_o: U_i's 16 wires then R_i's 8 wires, concentrated onto 8.
    assert layout.group_widths(0, "L") == (16, 8)
    assert layout.group_offset(0, "L", "R") == 16
    assert layout.cascade(0, "L").guaranteed >= 6  # alpha-derated: 3/4 of 8
    with pytest.raises(ValueError, match=r"^input port L does not feed output port L$"):
        layout.group_offset(0, "L", "L")


@pytest.mark.parametrize(("leaves", "w"), [(16, 16), (16, 7), (64, 16)])
def test_component_count_matches_built_graphs(leaves, w):
    from fattree.spec.capacities import node_components

    layout = TreeLayout.universal(leaves, w)
    for level in range(layout.levels):
        counted = node_components(layout.capacities, level)
        cascades = [layout.cascade(level, port) for port in "ULR"]
        built_edges = sum(st.graph.edges for c in cascades for st in c.stages)
        built_inputs = sum(st.graph.r for c in cascades for st in c.stages)
        assert counted["crosspoints"] == built_edges
        assert counted["stage_inputs"] == built_inputs
        assert counted["selectors"] == layout.cap(level) + 2 * layout.cap(level + 1)
