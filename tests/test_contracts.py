"""The parameter contracts (fattree/params.py ``Param``/``Contract``, one per design in its
definitions module): the design table offers exactly them, and a Python value is checked
with the same messages as the ``check_*`` functions the components used to call."""

from __future__ import annotations

import pytest

from fattree.designs import DESIGNS
from fattree.params import UNBOUNDED, Contract, Param

#: Design -> "module:attribute" of its contract.
CONTRACTS = {
    "selector": "fattree.spec.leiserson_frames:SELECTOR",
    "circuit-tree-paper": "fattree.spec.circuit:CIRCUIT_TREE",
    "circuit-tree": "fattree.spec.circuit_fast:CIRCUIT_TREE_FAST",
    "circuit-router": "fattree.spec.circuit:CIRCUIT_ROUTER",
    "scheduler": "fattree.spec.scheduler:SCHEDULER",
    "leiserson-tree": "fattree.spec.capacities:LEISERSON_TREE",
    "leiserson-stream": "fattree.spec.leiserson_frames:LEISERSON_STREAM",
    "leiserson-online": "fattree.spec.leiserson_online:LEISERSON_ONLINE",
    "hypercube": "fattree.spec.hypercube:HYPERCUBE",
    "rn1": "fattree.spec.rn1:RN1",
    "rn1-bidelta": "fattree.spec.rn1_bidelta:RN1_BIDELTA",
    "rn1-bidelta-stream": "fattree.spec.rn1_endpoint:RN1_BIDELTA_STREAM",
    "rn1-unit-tree": "fattree.spec.rn1_tree:RN1_UNIT_TREE",
    "rn1-fat-tree": "fattree.spec.rn1_endpoint:RN1_FAT_TREE",
    "rn1-fat-tree-network": "fattree.spec.rn1_tree:RN1_FAT_TREE_NETWORK",
    "rn1-hybrid": "fattree.spec.rn1_hybrid:RN1_HYBRID",
}


def _contract(design: str) -> Contract:
    from fattree.registry import resolve

    return resolve(CONTRACTS[design])


@pytest.mark.parametrize("design", sorted(CONTRACTS))
def test_the_table_offers_the_contract(design):
    contract = _contract(design)
    assert contract.design == design
    assert DESIGNS[design].params is contract.params


def test_every_design_has_a_contract():
    assert set(CONTRACTS) == set(DESIGNS)


@pytest.mark.parametrize("design", sorted(CONTRACTS))
def test_defaults_and_bounds_pass_the_check(design):
    # What the command line offers, the component and the model take (a text parameter
    # without a check of its own is checked where it is used: faults against the network).
    for param in _contract(design).params:
        if param.text is not None and param.value is None:
            continue
        values = [param.default]
        if not (param.choices or param.value):
            values += [param.lo] + ([param.hi] if param.hi is not None else [])
        for value in values:
            assert param.check(value, model=True) == param.check(value), (param.name, value)


def test_limits_are_at_least_the_command_lines():
    for design in CONTRACTS:
        for param in _contract(design).params:
            if param.limit is not None:
                assert param.hi is not None and param.limit > param.hi, (design, param.name)
            if param.model_limit is not None:
                assert param.model_limit > (param.upper() or 0), (design, param.name)


@pytest.mark.parametrize(
    ("param", "value", "model", "error", "message"),
    [
        (
            Param("width", 8, "", lo=1, hi=64, limit=UNBOUNDED),
            0,
            False,
            ValueError,
            "width must be a positive integer, not 0",
        ),
        (Param("width", 8, "", lo=1, hi=64, limit=UNBOUNDED), 2**20, False, None, None),
        (
            Param("width", 8, "", lo=1, hi=64),
            65,
            False,
            ValueError,
            "width must be between 1 and 64, not 65",
        ),
        (Param("seed", 0, "", lo=0), -1, False, ValueError, "seed must be at least 0, not -1"),
        (Param("seed", 0, "", lo=0), "1", False, TypeError, "seed must be an integer, not '1'"),
        (
            Param("leaves", 16, "", lo=2, hi=1024, power_of_two=True),
            12,
            False,
            ValueError,
            "leaves must be a power of two of at least 2, not 12",
        ),
        (
            Param("leaves", 16, "", lo=2, hi=1024, power_of_two=True),
            2048,
            False,
            ValueError,
            "leaves must be at most 1024, not 2048",
        ),
        (
            Param("leaves", 16, "", lo=2, hi=1024, power_of_two=True, model_limit=UNBOUNDED),
            2048,
            True,
            None,
            None,
        ),
        (
            Param("dim", 4, "", lo=1, hi=6, model_limit=16),
            7,
            False,
            ValueError,
            "dim must be between 1 and 6, not 7",
        ),
        (
            Param("dim", 4, "", lo=1, hi=6, model_limit=16),
            17,
            True,
            ValueError,
            "dim must be between 1 and 16, not 17",
        ),
        (
            Param("memory", "auto", "", choices=("auto", "portable")),
            "bram",
            False,
            ValueError,
            "memory must be 'auto' or 'portable', not 'bram'",
        ),
        (
            Param("memory", "auto", "", choices=("auto", "portable")),
            9,
            False,
            TypeError,
            "memory must be a string, not 9",
        ),
    ],
)
def test_check_messages(param, value, model, error, message):
    if error is None:
        assert param.check(value, model=model) == value
        return
    with pytest.raises(error) as raised:
        param.check(value, model=model)
    assert str(raised.value) == message


def test_an_unknown_parameter_is_named():
    with pytest.raises(KeyError, match="design selector has no parameter 'depth'"):
        _contract("selector")["depth"]
