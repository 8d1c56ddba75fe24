"""Reference schedulers: level-wise, local greedy / random, optimal; checked by an independent
oracle that walks the routes on the topology with up_neighbour / down_neighbour."""

import itertools
import random
from collections import Counter

import pytest

from fattree.sim.models.scheduler import (
    Grant,
    SchedulerModel,
    bipartite_edge_colouring,
    level_wise_by_level,
    optimal_ports,
    optimal_rounds,
    schedule,
)
from fattree.spec.topology import FatTree, Link

# -- the independent checker ----------------------------------------------------------------


def walk(tree, src, dst, ports):
    """Links of the route, found by walking the wiring: climb through the given up ports with
    up_neighbour, then search down from the top with down_neighbour for the one way to dst's
    leaf switch (no use of Theorem 1/2 formulas or of FatTree.route)."""
    w = tree.w
    here, links = src // w, [Link("inject", 0, src // w, src % w)]
    for h, p in enumerate(ports):
        links.append(Link("up", h, here, p))
        _, here, _ = tree.up_neighbour(h, here, p)
    found = []

    def down(level, switch, trail):
        if level == 0:
            if switch == dst // w:
                found.append(trail)
            return
        for port in range(w):
            child_level, child, up_port = tree.down_neighbour(level, switch, port)
            down(child_level, child, trail + [Link("down", child_level, child, up_port)])

    down(len(ports), here, [])
    assert len(found) == 1, f"{src}->{dst} via {ports}: {len(found)} ways down"
    return links + found[0] + [Link("eject", 0, dst // w, dst % w)]


def check_conflict_free(tree, grants):
    """Every granted connection is a real route of minimal height, and in each round no link
    (node cables included) carries two connections."""
    used = {}
    for g in grants:
        if not g.granted:
            continue
        assert len(g.ports) == g.height == tree.common_level(g.src, g.dst)
        for link in walk(tree, g.src, g.dst, g.ports):
            key = (g.round, link)
            assert key not in used, f"{link} in round {g.round} used by {used[key]} and {g}"
            used[key] = g


def random_permutation(tree, rng):
    dst = list(tree.nodes())
    rng.shuffle(dst)
    return list(zip(tree.nodes(), dst, strict=True))


def random_partial(tree, rng, count):
    src = rng.sample(range(tree.num_nodes), count)
    dst = rng.sample(range(tree.num_nodes), count)
    return list(zip(src, dst, strict=True))


# -- an oracle replaying each algorithm's rule on a set of taken links ---------------------


def oracle(tree, requests, algorithm, failure_mode, grants):
    """Replay the grants in order against a set of taken links and check each decision is
    what the algorithm's rule demands in that state (for ``random``: that the choice was
    legal). Returns the final taken set."""
    taken = set()
    for (src, dst), g in zip(requests, grants, strict=True):
        assert (g.src, g.dst) == (src, dst)
        height = tree.common_level(src, dst)
        s, d = src // tree.w, dst // tree.w
        ports, mine = [], []
        failed = None
        if algorithm == "level-wise":
            for h in range(height):
                free = [
                    i
                    for i in range(tree.w)
                    if Link("up", h, s, i) not in taken and Link("down", h, d, i) not in taken
                ]
                if not free:
                    failed = h
                    break
                i = free[0]
                ports.append(i)
                mine += [Link("up", h, s, i), Link("down", h, d, i)]
                taken |= set(mine[-2:])
                s, d = tree.up_neighbour(h, s, i)[1], tree.up_neighbour(h, d, i)[1]
        else:
            for h in range(height):
                free = [i for i in range(tree.w) if Link("up", h, s, i) not in taken]
                if not free:
                    failed = h
                    break
                if algorithm == "greedy":
                    i = free[0]
                else:
                    i = g.ports[h]
                    assert i in free
                ports.append(i)
                mine.append(Link("up", h, s, i))
                taken.add(mine[-1])
                s = tree.up_neighbour(h, s, i)[1]
            if failed is None:
                for link in walk(tree, src, dst, ports)[1 + height : -1]:
                    if link in taken:
                        failed = link.level
                        break
                    mine.append(link)
                    taken.add(link)
        assert g.ports == tuple(ports), (src, dst, g, ports)
        assert g.granted == (failed is None) and g.failed_level == failed
        if failed is not None and failure_mode == "release":
            taken -= set(mine)
    return taken


SIZES = [(2, 2), (2, 3), (2, 4), (3, 2), (3, 3), (3, 4), (4, 2), (4, 3), (2, 8)]


@pytest.mark.parametrize("levels, w", SIZES)
@pytest.mark.parametrize("algorithm", ["level-wise", "greedy", "random"])
@pytest.mark.parametrize("failure_mode", ["keep", "release"])
def test_heuristics_follow_their_rule(levels, w, algorithm, failure_mode):
    tree = FatTree(levels, w)
    rng = random.Random(f"{levels}-{w}-{algorithm}-{failure_mode}")
    for trial in range(12):
        if trial % 3:
            requests = random_permutation(tree, rng)
        else:
            requests = random_partial(tree, rng, rng.randint(1, tree.num_nodes))
        model = SchedulerModel(tree, algorithm, failure_mode, seed=trial)
        grants = [model.request(src, dst) for src, dst in requests]
        check_conflict_free(tree, grants)
        taken = oracle(tree, requests, algorithm, failure_mode, grants)
        assert model.state.taken() == taken
        if failure_mode == "release":
            # Only the granted connections hold links.
            held = {x for g in grants if g.granted for x in walk(tree, g.src, g.dst, g.ports)}
            assert taken == {x for x in held if x.direction in ("up", "down")}


@pytest.mark.parametrize("levels, w", SIZES)
def test_level_wise_request_order_equals_fig7_level_order(levels, w):
    tree = FatTree(levels, w)
    rng = random.Random(levels * 31 + w)
    for _ in range(20):
        requests = random_permutation(tree, rng)
        assert schedule(tree, requests, "level-wise") == level_wise_by_level(tree, requests)


def test_fig4_global_information_resolves_the_conflict():
    # SW(0,0) and SW(0,1) both send to SW(0,8) in FT(3, 4).
    tree = FatTree(3, 4)
    requests = [(0, 32), (4, 33)]
    level_wise = schedule(tree, requests, "level-wise")
    assert [g.granted for g in level_wise] == [True, True]
    assert [g.ports for g in level_wise] == [(0, 0), (1, 0)]
    greedy = schedule(tree, requests, "greedy")
    # The local scheduler picks Ulink(0,1,0) too; Dlink(0,8,0) is then taken.
    assert greedy[0] == Grant(0, 32, True, (0, 0), 2)
    assert greedy[1] == Grant(4, 33, False, (0, 1), 2, failed_level=0)


def test_fig8_example():
    # FT(4, 4), node 3 -> node 95 with Ulink(1, s1)[0] taken: P = (0, 1, 0).
    tree = FatTree(4, 4)
    model = SchedulerModel(tree)
    model.state.take(Link("up", 1, 0, 0))
    g = model.request(3, 95)
    assert g.granted and g.ports == (0, 1, 0) and g.port_vector(4) == (0, 1, 0)
    assert model.state.taken() == {Link("up", 1, 0, 0)} | set(tree.route(3, 95, [0, 1, 0])[1:-1])


def test_local_requests_always_granted():
    tree = FatTree(2, 4)
    for algorithm in ["level-wise", "greedy", "random", "optimal"]:
        grants = schedule(tree, [(0, 3), (1, 1), (3, 0)], algorithm)
        assert all(g.granted and g.ports == () and g.height == 0 for g in grants)


def test_release_and_clear():
    tree = FatTree(3, 4)
    model = SchedulerModel(tree)
    a = model.request(0, 63)
    b = model.request(1, 62)
    assert a.granted and b.granted and a.ports != b.ports
    model.release(0, 63, a.ports)
    assert model.state.taken() == set(tree.route(1, 62, b.ports)[1:-1])
    with pytest.raises(ValueError) as info:
        model.release(0, 63, a.ports)
    assert str(info.value) == (
        "connection 0 -> 63 with ports (0, 0) is not established: U(0,0,0) is free"
    )
    # After the release the same request gets the same ports again.
    assert model.request(0, 63) == a
    model.clear()
    assert model.state.taken() == set()


def test_random_is_seeded():
    tree = FatTree(3, 8)
    requests = random_permutation(tree, random.Random(5))
    first = schedule(tree, requests, "random", seed=1)
    assert schedule(tree, requests, "random", seed=1) == first
    assert schedule(tree, requests, "random", seed=2) != first


# -- optimal ----------------------------------------------------------------------------------


@pytest.mark.parametrize("levels, w", [(2, 2), (3, 2)])
def test_optimal_every_permutation_small(levels, w):
    tree = FatTree(levels, w)
    perms = itertools.permutations(tree.nodes())
    if tree.num_nodes > 4:
        perms = itertools.islice(perms, 0, None, 37)  # every 37th of the 40320
    for dst in perms:
        requests = list(zip(tree.nodes(), dst, strict=True))
        grants = schedule(tree, requests, "optimal")
        assert all(g.granted for g in grants)
        check_conflict_free(tree, grants)


@pytest.mark.parametrize("levels, w", [(2, 3), (3, 3), (3, 4), (4, 2), (4, 3), (2, 8), (3, 8)])
def test_optimal_random_permutations(levels, w):
    tree = FatTree(levels, w)
    rng = random.Random(levels * 100 + w)
    for _ in range(10):
        requests = random_permutation(tree, rng)
        grants = schedule(tree, requests, "optimal")
        assert all(g.granted for g in grants)
        check_conflict_free(tree, grants)


def test_optimal_worst_case_for_local():
    # Leaf switches 0, 2 and 3 all send to leaf switch 1: the local scheduler sends every one
    # up port 0 and they collide on Dlink(0, 1, 0); global information avoids that.
    tree = FatTree(2, 4)
    requests = [(0, 4), (8, 5), (12, 6)]
    assert all(g.granted for g in schedule(tree, requests, "optimal"))
    assert [g.ports for g in schedule(tree, requests, "level-wise")] == [(0,), (1,), (2,)]
    assert [g.granted for g in schedule(tree, requests, "greedy")] == [True, False, False]
    assert sorted(optimal_ports(tree, requests)) == [(0,), (1,), (2,)]


@pytest.mark.parametrize("levels, w", [(2, 2), (2, 4), (3, 2), (3, 3), (4, 2)])
def test_optimal_rounds_meet_the_load_bound(levels, w):
    tree = FatTree(levels, w)
    rng = random.Random(levels * 7 + w)
    for _ in range(10):
        count = rng.randint(1, 3 * tree.num_nodes)
        hot = rng.randrange(tree.num_nodes)
        requests = [
            (rng.choice([hot, rng.randrange(tree.num_nodes)]), rng.randrange(tree.num_nodes))
            for _ in range(count)
        ]
        load = max(
            max(Counter(s for s, _ in requests).values()),
            max(Counter(d for _, d in requests).values()),
        )
        grants = optimal_rounds(tree, requests)
        assert [(g.src, g.dst) for g in grants] == requests
        assert all(g.granted for g in grants)
        # No schedule can use fewer rounds than the load (one cable per node), and this one
        # uses exactly that many.
        assert 1 + max(g.round for g in grants) == load
        check_conflict_free(tree, grants)
        for algorithm in ["level-wise", "greedy"]:
            heuristic = schedule(tree, requests, algorithm, rounds=True)
            assert all(g.granted for g in heuristic)
            assert 1 + max(g.round for g in heuristic) >= load
            check_conflict_free(tree, heuristic)


def test_bipartite_edge_colouring():
    rng = random.Random(3)
    for _ in range(50):
        degree = rng.randint(1, 6)
        # A random d-regular bipartite multigraph: union of d random perfect matchings.
        n = rng.randint(1, 12)
        edges = []
        for _ in range(degree):
            perm = list(range(n))
            rng.shuffle(perm)
            edges += [(u, v) for u, v in enumerate(perm)]
        rng.shuffle(edges)
        colours = bipartite_edge_colouring(edges, degree)
        assert set(colours) <= set(range(degree))
        assert len(set(zip([u for u, _ in edges], colours, strict=True))) == len(edges)
        assert len(set(zip([v for _, v in edges], colours, strict=True))) == len(edges)
    with pytest.raises(ValueError) as info:
        bipartite_edge_colouring([(0, 0), (0, 1), (0, 2)], 2)
    assert str(info.value) == "a vertex has more than 2 edges, so 2 colours are not enough"


@pytest.mark.parametrize(
    "call, exc, message",
    [
        (
            lambda t: schedule(t, [(0, 1), (0, 2)]),
            ValueError,
            "request 1: source 0 already sends in request 0",
        ),
        (
            lambda t: schedule(t, [(0, 1), (2, 1)], "optimal"),
            ValueError,
            "request 1: destination 1 already receives in request 0",
        ),
        (
            lambda t: schedule(t, [(0, 16)]),
            ValueError,
            "dst must be between 0 and 15, not 16",
        ),
        (
            lambda t: schedule(t, [], "best"),
            ValueError,
            "algorithm must be one of level-wise, greedy, random, optimal, not 'best'",
        ),
        (
            lambda t: schedule(t, [], failure_mode="drop"),
            ValueError,
            "failure_mode must be one of keep, release, not 'drop'",
        ),
        (
            lambda t: SchedulerModel(t, "optimal"),
            ValueError,
            "algorithm must be one of level-wise, greedy, random, not 'optimal'",
        ),
        (
            lambda t: SchedulerModel(3),
            TypeError,
            "tree must be a FatTree or a GeneralizedFatTree, not 3",
        ),
    ],
)
def test_errors(call, exc, message):
    with pytest.raises(exc) as info:
        call(FatTree(2, 4))
    assert str(info.value) == message
