"""The arbitration situations of the paper tree's routers and the rounds that meet them
(fattree.sim.checks.circuit_collisions), on the model."""

import random

from fattree.sim.checks.circuit_collisions import collision_rounds, reachable, situations
from fattree.sim.models.circuit import CircuitTreeModel, Driver, run_model
from fattree.sim.models.circuit_fast import CircuitFastTreeModel

A, B, C, D = 0, 1, 2, 3


def test_rounds_meet_every_reachable_situation_at_four_leaves():
    model = CircuitTreeModel(4, 2, 2, 1, "immediate")
    met = set()
    for _name, queues, options in collision_rounds(model, random.Random(3), 2000, met):
        run_model(model, queues, delays=options["delays"])
    assert met == reachable(model)
    assert len(reachable(model)) == 80  # 2 routers: 26 down and 14 up situations each


def test_rounds_repeat_on_the_model_as_tried():
    """Each round, run on the model itself, meets what it met on the copy it was tried on (the
    bench relies on it: it runs the rounds on the design in lock step with the model)."""
    model = CircuitTreeModel(4, 2, 2, 1, "immediate")
    met, seen = set(), set()
    for _name, queues, options in collision_rounds(model, random.Random(5), 2000, met):
        seen |= _run(model, queues, options["delays"])
    assert met <= seen


def _run(model, queues, delays):
    """Run one round on ``model`` (receivers ready), returning the situations it met."""
    driver, total, done, start, seen = Driver(queues), sum(map(len, queues)), 0, model.cycle, set()
    while done < total or driver.pending():
        seen |= situations(model)
        valid, dest, data = driver.inputs()
        valid = [v if model.cycle - start >= d else 0 for v, d in zip(valid, delays, strict=True)]
        out = model.step(valid, dest, data)
        driver.taken([r & v for r, v in zip(out.tx_ready, valid, strict=True)])
        done += sum(out.tx_done)
    for _ in range(40):  # let the last receive streams empty
        model.step([0] * model.leaves, [0] * model.leaves, [0] * model.leaves)
    return seen


def test_situations_agree_with_the_arbitration():
    """Whenever the turn and C claim one free down port in one cycle, the model grants the
    turn and rejects C; with C and D, C wins; a held port rejects every claimant."""
    model = CircuitTreeModel(4, 2, 2, 1, "immediate")
    checked = set()
    rng = random.Random(7)
    for _name, queues, options in collision_rounds(model, rng, 2000):
        driver, start = Driver(queues), model.cycle
        delays = options["delays"]
        for _ in range(60):
            now = situations(model)
            valid, dest, data = driver.inputs()
            valid = [
                v if model.cycle - start >= d else 0 for v, d in zip(valid, delays, strict=True)
            ]
            out = model.step(valid, dest, data)
            driver.taken([r & v for r, v in zip(out.tx_ready, valid, strict=True)])
            for key, kind, port, who, held in now:
                if kind != "down" or "+" not in who:
                    continue
                decided = model.routers[key].decisions
                inputs = {"T": B if port == "A" else A, "C": C, "D": D}
                names = who.split("+")
                winner = None if held else names[0]
                for name in names:
                    assert decided[inputs[name]] == ("grant" if name == winner else "reject")
                checked.add((port, who, held))
        run_model(model, [[] for _ in range(4)])
    assert ("A", "T+C", False) in checked and ("B", "C+D", True) in checked


def test_fast_tree_rounds_meet_most_situations():
    """The fast tree: every claimant set of every down port at level 0 (a node may send to
    itself), with the LFSR bit where C and D claim together; the rounds meet all but a few of
    the rarest (a held port and three heads in one cycle)."""
    model = CircuitFastTreeModel(4, 2, 2, 1, 8)
    met = set()
    for _name, queues, options in collision_rounds(model, random.Random(3), 3000, met):
        run_model(model, queues, delays=options["delays"])
    wanted = reachable(model)
    assert met <= wanted
    assert len(wanted) == 172
    assert len(met) >= 160
    missed = wanted - met
    assert all(held and who.count("+") >= 2 for _k, _d, _p, who, held, _x in missed)
