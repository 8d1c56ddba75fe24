"""Self-test tops for real FPGA boards.

:data:`SELFTESTS` says which designs have a self-test core and how to make one: a
``wiring.Component`` that generates traffic, checks the design's outputs on chip and has the
status outputs ``heartbeat``, ``ok`` and ``error`` (see :mod:`fattree.boards.platforms` for
the boards and the LEDs they go to). A design adds its own self-test by adding an entry.

The network designs share one shape (:mod:`fattree.boards.selftest`): a design writes a
harness (traffic source, the design, an independent checker, the model's expected trace) and
:class:`~fattree.boards.selftest.SelfTestCore` adds counters, LEDs, fault injection, the
status line and the replay loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..registry import Registry, resolve

__all__ = ["SelfTest", "SELFTESTS", "get_selftest"]


@dataclass(frozen=True)
class SelfTest:
    design: str
    #: ``"module:function"`` making the core: ``function(design_params, seed=...,
    #: blink_log2=..., fault_log2=..., **options)``.
    core: str
    summary: str
    #: Board name -> design parameters that differ from the design's defaults there (the
    #: largest point that fits the board and closes timing).
    board_params: dict[str, dict[str, int | str]] = field(default_factory=dict)
    #: Options of the self-test itself the core accepts (e.g. ``pattern``).
    options: tuple[str, ...] = ()

    def build(self, params: dict[str, int], *, seed: int, blink_log2: int, fault_log2, **options):
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            known = ", ".join(self.options) or "none"
            raise ValueError(
                f"the {self.design} self-test has no option {unknown[0]!r}; its options: {known}"
            )
        return resolve(self.core)(
            params, seed=seed, blink_log2=blink_log2, fault_log2=fault_log2, **options
        )

    def defaults_for(self, board: str, family: str | None = None) -> dict[str, int | str]:
        """Design parameters this self-test uses on ``board`` unless given. A board without a
        point of its own (one found in amaranth-boards) takes the point of the tuned board of
        its ``family`` (iCEBreaker for iCE40, ULX3S-85F for ECP5); if that does not fit its
        device, the build says by how much."""
        if board not in self.board_params and family in FAMILY_REFERENCE:
            board = FAMILY_REFERENCE[family]
        return dict(self.board_params.get(board, {}))


#: The tuned board whose self-test points a board of the family without its own takes.
FAMILY_REFERENCE = {"ice40": "icebreaker", "ecp5": "ulx3s-85f"}

#: The design record (``fattree.designs.Design.selftest``) names each core too;
#: tests/test_design_record.py checks that the two agree, both ways.
SELFTESTS: Registry[SelfTest] = Registry(
    "self-test",
    [
        SelfTest(
            design="selector",
            core="fattree.boards.selector_selftest:selftest",
            summary="LFSR frames of random length and M bits; branch outputs checked every cycle",
        ),
        SelfTest(
            design="circuit-tree-paper",
            core="fattree.boards.circuit_selftest:circuit_tree_selftest",
            summary=(
                "LFSR or pattern traffic; payload source/destination/sequence/check code checked; "
                "the model's delivery trace replayed from block RAM cycle for cycle"
            ),
            board_params={
                "icebreaker": {"leaves": 8, "width": 1, "length": 16},
                # 32 leaves: 16 % of the LUTs, 81 MHz; 64 leaves fits (36 %, 51.8 MHz) with
                # --nextpnr-router router2, not tried with the default router (docs/boards.md).
                "ulx3s-85f": {"leaves": 32, "width": 8, "length": 2},
            },
            options=("pattern", "inject_cycles"),
        ),
        SelfTest(
            design="circuit-tree",
            core="fattree.boards.circuit_fast_selftest:circuit_tree_fast_selftest",
            summary=(
                "the circuit tree's self-test (LFSR or pattern traffic, payload checked, the "
                "model's delivery trace replayed cycle for cycle) with a window in flight"
            ),
            board_params={
                "icebreaker": {"leaves": 8, "width": 2, "length": 8, "window": 2},
                # The reference point of docs/noc_compare.md (docs/boards.md: its figures).
                "ulx3s-85f": {"leaves": 16, "width": 8, "length": 2, "window": 8},
            },
            options=("pattern", "inject_cycles"),
        ),
        SelfTest(
            design="scheduler",
            core="fattree.boards.scheduler_selftest:scheduler_selftest",
            summary=(
                "CLEAR then LFSR SCHEDULE requests; every result compared, in order, with the "
                "model's from block RAM"
            ),
            board_params={"icebreaker": {"levels": 3, "w": 4}, "ulx3s-85f": {"levels": 3, "w": 16}},
            options=("requests",),
        ),
        SelfTest(
            design="leiserson-tree",
            core="fattree.boards.leiserson_selftest:leiserson_selftest",
            summary=(
                "an off-line schedule's waveforms from block RAM; every receive wire compared "
                "cycle for cycle with the model, every payload checked"
            ),
            # ULX3S-85F: 32 leaves, w = 32: 24 % of the LUTs, 76 MHz (docs/boards.md).
            board_params={"icebreaker": {"leaves": 8}, "ulx3s-85f": {"leaves": 32}},
            options=("pattern",),
        ),
        SelfTest(
            design="leiserson-online",
            core="fattree.boards.leiserson_online_selftest:online_selftest",
            summary=(
                "every leaf's messages from on-chip tables, switches set on-line, lost ones "
                "resent; every receipt's payload checked, the model's delivery trace replayed "
                "from block RAM cycle for cycle"
            ),
            # The payload (source, destination, sequence, check code) needs 2 lg n + 2 bits.
            board_params={
                "icebreaker": {"leaves": 8, "data_bits": 14},
                "ulx3s-85f": {"leaves": 16, "data_bits": 16},
            },
            options=("pattern",),
        ),
        SelfTest(
            design="hypercube",
            core="fattree.boards.hypercube_selftest:hypercube_selftest",
            summary=(
                "every processor sends LFSR or pattern traffic; payload source/destination/"
                "sequence/check code/time stamp checked; the model's delivery trace replayed "
                "from block RAM cycle for cycle"
            ),
            board_params={
                "icebreaker": {"dim": 3, "procs": 1, "buffers": 1, "data_bits": 14},
                "ulx3s-85f": {"dim": 4, "procs": 2, "buffers": 2, "data_bits": 24},
            },
            options=("pattern", "messages"),
        ),
        SelfTest(
            design="rn1-bidelta-stream",
            core="fattree.boards.rn1_selftest:rn1_selftest",
            summary=(
                "every endpoint sends LFSR or pattern messages; header source/destination/"
                "length/sequence/time stamp and check byte checked; the model's delivery "
                "trace replayed from block RAM cycle for cycle"
            ),
            board_params={
                "icebreaker": {"endpoints": 4, "max_bytes": 4},
                "ulx3s-85f": {"endpoints": 16},
            },
            options=("pattern", "messages"),
        ),
        SelfTest(
            design="rn1-fat-tree",
            core="fattree.boards.rn1_selftest:rn1_fat_tree_selftest",
            summary=(
                "the rn1-bidelta-stream self-test on the 64-node fat-tree: every node sends "
                "LFSR or pattern messages, headers and check bytes checked, the model's "
                "delivery trace replayed from block RAM cycle for cycle"
            ),
            options=("pattern", "messages"),
        ),
    ],
    key="design",
    message="design {name!r} has no board self-test; designs with one: {known}",
)


def get_selftest(design: str) -> SelfTest:
    """The self-test of ``design``; ``ValueError`` naming the designs with one if none."""
    return SELFTESTS.get_or_raise(design)
