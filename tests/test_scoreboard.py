"""The one scoreboard of the benches and tests, and the one way to break the reference."""

import pytest

from fattree.sim.scoreboard import Scoreboard, break_reference
from fattree.spec.scheduler import Op

CHECKS = ("cycle_mismatches", "message_mismatches")


@pytest.mark.parametrize(
    "value, broken",
    [
        (6, 4),  # the lowest set bit cleared
        (1, 0),
        (0, None),  # nothing to break
        ([0, 0], None),
        ((0, 5, 3), (0, 4, 3)),  # the first non-zero number only
        ([[0, 0], [0, 12, 1]], [[0, 0], [0, 8, 1]]),  # depth first, lists stay lists
        ((("leaf", 0), (1, 0, 1)), (("leaf", 0), (0, 0, 1))),  # strings skipped
        ((Op.SCHEDULE, 0, 3, 1, (0,)), (Op.SCHEDULE, 0, 2, 1, (0,))),
        (None, None),
    ],
)
def test_break_reference(value, broken):
    assert break_reference(value) == broken


def test_break_reference_copies():
    rows = [[0, 3], [1]]
    assert break_reference(rows) == [[0, 2], [1]]
    assert rows == [[0, 3], [1]]


def test_compare_counts_and_reports_the_first_failure():
    sb = Scoreboard(CHECKS)
    assert sb.compare("cycle_mismatches", "cycle 0", (1, 2), (1, 2))
    assert not sb.compare("cycle_mismatches", "cycle 1", (1, 2), (1, 3), ("a", "b"))
    assert not sb.compare("message_mismatches", "frame 4", [1], [0])
    sb.fail("message_mismatches", "lost one")
    assert sb.failures == {"cycle_mismatches": 1, "message_mismatches": 2}
    assert sb.mismatches == 3
    assert sb.first_mismatch == "cycle 1: b = 2, model says 3"
    with pytest.raises(AssertionError, match=r"^3 mismatches; first: cycle 1: b = 2"):
        sb.raise_on_mismatch()


def test_report_without_names():
    sb = Scoreboard(["reference_mismatches"], unit="results")
    sb.compare("reference_mismatches", "result 7", (0, 1), None)
    assert sb.first_mismatch == "result 7: (0, 1), model says None"


def test_mutation_breaks_one_expected_value_once():
    # The first expected value with a non-zero number in it is broken, and nothing after it:
    # a run that agrees with its reference fails exactly once.
    sb = Scoreboard(CHECKS, mutate=True)
    stream = [(0, 0), (0, 0), (2, 1), (2, 1), (3, 0)]
    for cycle, value in enumerate(stream):
        sb.compare("cycle_mismatches", f"cycle {cycle}", value, value)
    assert sb.failures == {"cycle_mismatches": 1, "message_mismatches": 0}
    assert sb.first_mismatch == "cycle 2: (2, 1), model says (0, 1)"
    clean = Scoreboard(CHECKS)
    for value in stream:
        clean.compare("cycle_mismatches", "", value, value)
    assert clean.mismatches == 0
    clean.raise_on_mismatch()


def test_summary_keys():
    sb = Scoreboard(["reference_mismatches", "double_grants"], unit="results")
    sb.checked = 12
    sb.fail("double_grants", "link granted twice")
    assert sb.summary(40, commands=12) == {
        "cycles": 40,
        "checked": 12,
        "unit": "results",
        "results_checked": 12,
        "reference_mismatches": 0,
        "double_grants": 1,
        "mismatches": 1,
        "first_mismatch": "link granted twice",
        "commands": 12,
    }


@pytest.mark.parametrize("checks", [(), "cycle_mismatches"])
def test_bad_checks(checks):
    with pytest.raises(ValueError, match=r"^checks must be a non-empty sequence of names, not "):
        Scoreboard(checks)


def test_unknown_check():
    sb = Scoreboard(CHECKS)
    message = "check must be one of 'cycle_mismatches', 'message_mismatches', not 'cycles'"
    with pytest.raises(ValueError) as info:
        sb.fail("cycles", "x")
    assert str(info.value) == message
