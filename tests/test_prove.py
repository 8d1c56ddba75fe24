"""``fattree prove``: every property of a design proved (or bounded), and a deliberately
broken design caught with a counterexample."""

import json

import pytest

from fattree.proofs import PROOFS, prove
from fattree.scripts.main import main

pytestmark = pytest.mark.formal


def test_circuit_router_properties_are_proved(tmp_path):
    rows = prove("circuit-router", root=tmp_path)
    names = [p.name for p in PROOFS["circuit-router"].properties]
    assert [r["property"] for r in rows] == names
    # Every one by k-induction (unbounded), none merely bounded.
    assert {r["property"]: r["status"] for r in rows} == dict.fromkeys(names, "proved")


def test_broken_router_fails_with_a_counterexample(tmp_path):
    rows = prove("circuit-router", root=tmp_path, broken=True, only=["circuits"])
    assert [r["status"] for r in rows] == ["failed"]
    trace = rows[0]["counterexample"]
    assert trace and trace.endswith(".vcd")
    with open(trace) as f:
        assert "conn_" in f.read()  # the trace shows the router's circuits


def test_cli_json_and_errors(tmp_path, capsys):
    argv = ["prove", "circuit-router", "--property", "idle_router_quiet", "--json"]
    assert main(argv + ["--build-root", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["params"] == {"width": 2}
    assert [(p["property"], p["status"]) for p in out["properties"]] == [
        ("idle_router_quiet", "proved")
    ]
    assert main(["prove", "selector"]) == 2
    assert "has no proof yet" in capsys.readouterr().err
    assert main(["prove", "circuit-router", "--property", "nope"]) == 2
    assert "has no property 'nope'" in capsys.readouterr().err


@pytest.mark.slow  # the circuit tree's own proofs run by default; this is one of its parts
def test_network_interface_properties(tmp_path):
    rows = prove("network-interface", root=tmp_path)
    names = [p.name for p in PROOFS["network-interface"].properties]
    # Every one by k-induction; the receive properties rest on `receive_state`, an invariant
    # over the interface's receive flags (read from inside), itself proved.
    assert {r["property"]: r["status"] for r in rows} == dict.fromkeys(names, "proved")
    assert {r["property"]: r["assumes"] for r in rows}["rx_holds_until_taken"] == ["receive_state"]


def test_network_interface_wrong_contract_fails(tmp_path):
    rows = prove("network-interface", root=tmp_path, broken=True, only=["reject_only_when_full"])
    assert rows[0]["status"] == "failed" and rows[0]["counterexample"]


def test_circuit_tree_bounded_no_misdelivery_no_duplicate(tmp_path):
    # Two nodes keep the default run short (about 15 s); 4 nodes:
    # `fattree prove circuit-tree-paper`.
    rows = prove(
        "circuit-tree-paper",
        {"leaves": 2},
        root=tmp_path,
        only=["right_destination", "exactly_once"],
    )
    assert {r["property"]: r["status"] for r in rows} == {
        "right_destination": "bounded 20",
        "exactly_once": "bounded 20",
    }
    broken = prove(
        "circuit-tree-paper", {"leaves": 2}, root=tmp_path, broken=True, only=["right_destination"]
    )
    assert broken[0]["status"] == "failed" and broken[0]["counterexample"]


@pytest.mark.slow  # about a minute of solver time; the switch cascade's proof runs by default
def test_concentrator_stage_routes_exactly(tmp_path):
    rows = prove("concentrator", root=tmp_path)
    assert [(r["property"], r["status"]) for r in rows] == [("routed_exactly", "bounded 12")]
    broken = prove("concentrator", root=tmp_path, broken=True)
    assert broken[0]["status"] == "failed" and broken[0]["counterexample"]


def test_scheduler_grants_are_level_wise_and_never_share_a_link(tmp_path):
    # FT(2, 2): the pipeline, forwarding and link memories against Fig. 7 restated in the
    # harness, for any commands and any back-pressure, 18 cycles from reset (about 10 results).
    rows = prove(
        "scheduler",
        root=tmp_path,
        only=["no_link_granted_twice", "level_wise_grants"],
    )
    assert {r["property"]: r["status"] for r in rows} == {
        "no_link_granted_twice": "bounded 18",
        "level_wise_grants": "bounded 18",
    }
    # The contract with the highest free port instead of the lowest fails.
    broken = prove("scheduler", root=tmp_path, broken=True, only=["level_wise_grants"])
    assert broken[0]["status"] == "failed" and broken[0]["counterexample"]


@pytest.mark.slow
def test_scheduler_results_in_order(tmp_path):
    rows = prove("scheduler", root=tmp_path, only=["results_in_order"])
    assert rows[0]["status"] == "bounded 18"


@pytest.mark.slow  # over half a minute of solver time
def test_rn1_router_circuits_and_arbitration_are_proved(tmp_path):
    rows = prove("rn1", root=tmp_path, only=["circuits", "heads_served_when_outputs_free"])
    assert {r["property"]: r["status"] for r in rows} == {
        "circuits": "proved",
        "heads_served_when_outputs_free": "proved",
    }
    # A contract that serves a head ahead of earlier heads for its direction fails.
    broken = prove("rn1", root=tmp_path, broken=True, only=["heads_served_when_outputs_free"])
    assert broken[0]["status"] == "failed" and broken[0]["counterexample"]


@pytest.mark.slow  # about 40 s of solver time
def test_rn1_router_answers_every_head_within_a_cycle(tmp_path):
    # Bounded response, 1 cycle: passed on or refused, BLOCKED the cycle after the close.
    rows = prove("rn1", root=tmp_path, only=["responds"])
    assert [(r["status"], r["assumes"]) for r in rows] == [("proved", ["circuits"])]
    # The wrong contract "every head is passed on" fails: refusals happen.
    broken = prove("rn1", root=tmp_path, broken=True, only=["responds"])
    assert broken[0]["status"] == "failed" and broken[0]["counterexample"]


@pytest.mark.slow
@pytest.mark.parametrize("mode", [0, 1])
def test_rn1_router_every_property_is_proved(tmp_path, mode):
    rows = prove("rn1", {"mode": mode}, root=tmp_path)
    names = [p.name for p in PROOFS["rn1"].properties]
    assert {r["property"]: r["status"] for r in rows} == dict.fromkeys(names, "proved")


def test_hypercube_node_conserves_and_delivers_right(tmp_path):
    rows = prove("hypercube", root=tmp_path)
    names = [p.name for p in PROOFS["hypercube"].properties]
    assert {r["property"]: r["status"] for r in rows} == dict.fromkeys(names, "proved")
    # A contract under which the tagged message is never delivered fails: delivery is
    # reachable, so the properties are not vacuous.
    broken = prove("hypercube", root=tmp_path, broken=True, only=["exits_intact"])
    assert broken[0]["status"] == "failed" and broken[0]["counterexample"]


def test_concentrator_switch_cascade_routes_exactly(tmp_path):
    # Two stages (10 -> 7 -> 4): the stages' contracts chained, any traffic under a
    # conflict-free schedule, 12 cycles from reset (about 7 s; 13 took 9 minutes).
    rows = prove("concentrator-switch", root=tmp_path)
    assert [(r["property"], r["status"]) for r in rows] == [("routed_exactly", "bounded 12")]
    broken = prove("concentrator-switch", root=tmp_path, broken=True)
    assert broken[0]["status"] == "failed" and broken[0]["counterexample"]


@pytest.mark.slow  # over half a minute; the concentrator switch cascade's proof runs by default
def test_leiserson_node_routes_exactly(tmp_path):
    # 8 leaves, level 1: three ports (4, 2, 2 wires), the L and R switches one 6 -> 2 stage
    # each; selectors and switches against their contracts, 12 cycles from reset.
    rows = prove("leiserson-node", root=tmp_path)
    assert [(r["property"], r["status"]) for r in rows] == [("routed_exactly", "bounded 12")]
    broken = prove("leiserson-node", root=tmp_path, broken=True)
    assert broken[0]["status"] == "failed" and broken[0]["counterexample"]


def test_circuit_tree_answers_every_attempt_within_the_bound(tmp_path):
    # Bounded response, every receiver ready: at 2 nodes every attempt is answered within
    # 8 cycles (route word 0 two cycles after the take, 5 to the ack, the registered pulse);
    # 7 is too few (`--broken`): the bound is tight.
    rows = prove("circuit-tree-paper", {"leaves": 2}, root=tmp_path, only=["responds"])
    assert [r["status"] for r in rows] == ["bounded 20"]
    broken = prove(
        "circuit-tree-paper", {"leaves": 2}, root=tmp_path, broken=True, only=["responds"]
    )
    assert broken[0]["status"] == "failed" and broken[0]["counterexample"]


def test_circuit_tree_drains_when_traffic_stops(tmp_path):
    # No deadlock, bounded: at 2 nodes, 16 cycles after the traffic stops (at any of the first
    # 16 cycles; receivers ready from then on) every message taken is acknowledged. 8 cycles
    # are too few (a message in flight and one more waiting): the bound is not vacuous.
    rows = prove("circuit-tree-paper", {"leaves": 2, "drain": 16}, root=tmp_path, only=["drains"])
    assert [(r["status"], r["depth"]) for r in rows] == [("bounded 32", 32)]
    short = prove("circuit-tree-paper", {"leaves": 2, "drain": 8}, root=tmp_path, only=["drains"])
    assert short[0]["status"] == "failed" and short[0]["counterexample"]


# Level 1 repeats level 0's rules with turns only: a slow point.
@pytest.mark.parametrize("level", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_fast_router_properties_are_proved(tmp_path, level):
    # Level 0 (two leaves below, up ports c and d) and the top of a 4-leaf tree (turns only).
    rows = prove("circuit-fast-router", {"level": level}, root=tmp_path)
    names = [p.name for p in PROOFS["circuit-fast-router"].properties]
    assert {r["property"]: r["status"] for r in rows} == dict.fromkeys(names, "proved")


def test_broken_fast_router_fails_every_property(tmp_path):
    rows = prove("circuit-fast-router", root=tmp_path, broken=True)
    assert [r["status"] for r in rows] == ["failed"] * len(rows)
    assert all(r["counterexample"] for r in rows)


def test_fast_tree_two_nodes_bounded(tmp_path):
    # Two nodes keep the default run short (about 10 s); 4 nodes: `fattree prove
    # circuit-tree` (about 5 minutes), and the slow test below.
    params = {"leaves": 2, "drain": 24}
    rows = prove("circuit-tree", params, root=tmp_path)
    assert {r["property"]: r["status"] for r in rows} == {
        "right_destination": "bounded 24",
        "delivered_once": "bounded 24",
        "acked_iff_delivered": "bounded 24",
        "drains": "bounded 28",
        "attempts_in_flight": "proved",
        "responds": "proved",
    }
    # Every wrong contract (no message in flight, all for node 0, acknowledged as delivered,
    # drained at once, an attempt a stage late, answered within F + 1 cycles) is caught: the
    # properties are not vacuous, and the response bound F + 2 is tight.
    broken = prove("circuit-tree", params, root=tmp_path, broken=True)
    assert [r["status"] for r in broken] == ["failed"] * 6


@pytest.mark.slow  # about 5 minutes of solver time
def test_fast_tree_four_nodes_bounded(tmp_path):
    rows = prove("circuit-tree", root=tmp_path)
    assert {r["property"]: r["status"] for r in rows} == {
        "right_destination": "bounded 24",
        "delivered_once": "bounded 24",
        "acked_iff_delivered": "bounded 24",
        "drains": "bounded 84",
        "attempts_in_flight": "proved",
        "responds": "proved",
    }
