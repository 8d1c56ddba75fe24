"""The scenarios behind :data:`fattree.waves.DIAGRAMS`: short amaranth.sim runs of the RTL
whose VCD the diagrams are drawn from. Each takes the VCD path and returns a
:class:`~fattree.waves.Trace`; cycle 0 is the first rising edge after reset."""

from __future__ import annotations

from .waves import Trace, read_vcd

__all__ = ["circuit_tree_drop", "circuit_tree_reject", "leiserson_stream_cycle"]

TOP = "bench.top"


def _run(dut, bench, vcd: str) -> None:
    from .sim.testbench import simulate

    simulate(dut, bench, vcd=vcd)


def circuit_tree_reject(vcd: str) -> Trace:
    """Node 0 sends 0x21 then 0x43 to node 1 (``width = 4``, ``length = 2``, immediate retry);
    node 1's receiver is not ready until cycle 19: the second message is rejected once, then
    delivered. The same scenario as the model's table in docs/circuit_tree.md."""
    from .hdl.circuit_tree import CircuitFatTree

    dut = CircuitFatTree(2, 4, 2, 1)
    cycles, ready_from, offer_at = 28, 19, 2

    async def bench(ctx):
        queue = [0x21, 0x43]
        for cycle in range(cycles):
            offering = bool(queue) and cycle >= offer_at
            ctx.set(dut.tx[0].valid, offering)
            if offering:
                ctx.set(dut.tx[0].payload, {"dest": 1, "data": queue[0]})
            ctx.set(dut.rx[1].ready, cycle >= ready_from)
            if offering and ctx.get(dut.tx[0].ready):
                queue.pop(0)
            await ctx.tick()

    _run(dut, bench, vcd)
    ni0, ni1 = f"{TOP}.ni0", f"{TOP}.ni1"
    rows = read_vcd(
        vcd,
        {
            "tx[0].valid": f"{ni0}.tx__valid",
            "tx[0].ready": f"{ni0}.tx__ready",
            "inject valid": f"{ni0}.up__valid",
            "inject data": f"{ni0}.up__data",
            "eject valid": f"{ni1}.down__valid",
            "eject data": f"{ni1}.down__data",
            "eject reject": f"{ni1}.down__reject",
            "eject ack": f"{ni1}.down__ack",
            "inject reject": f"{ni0}.up__reject",
            "inject ack": f"{ni0}.up__ack",
            "tx_reject[0]": f"{ni0}.tx_reject",
            "tx_done[0]": f"{ni0}.tx_done",
            "rx[1].valid": f"{ni1}.rx__valid",
            "rx[1].ready": f"{ni1}.rx__ready",
            "rx[1].data": f"{ni1}.rx__payload",
        },
        clock=f"{TOP}.clk",
    )
    return Trace(
        "circuit tree, 2 nodes: rx[1] not ready until cycle 19, so the second message is "
        "rejected and retried",
        {k: v[:cycles] for k, v in rows.items()},
        buses={"inject data", "eject data", "rx[1].data"},
        notes=[
            "2: 0x21 taken; 9: stored in rx[1], ack; 11: tx_done, 0x43 taken.",
            "15: its first word meets a full rx[1]: reject 16, tx_reject 18, retry from 19;",
            "19: rx[1] takes 0x21; 21: the retry finds rx[1] empty: stored 24, tx_done 26.",
        ],
    )


def circuit_tree_drop(vcd: str) -> Trace:
    """The tree that carries traffic (4 nodes, ``width = 4``, ``length = 2``, window 2): node 2
    sends 0x65 to node 1 at cycle 2 and node 0 sends 0x21 to node 1 at cycle 4, so that both
    heads reach node 1's down port in the same cycle. Node 0's (turning there) is granted,
    node 2's dropped: no acknowledgement comes back at its fixed time, and node 2 sends it
    again from its window."""
    from .hdl.circuit_fast.tree import CircuitFastTree

    dut = CircuitFastTree(4, 4, 2, seed=1, window=2)
    cycles, offers = 24, {2: (2, 0x65), 0: (4, 0x21)}

    async def bench(ctx):
        waiting = dict(offers)
        for cycle in range(cycles):
            for node in range(4):
                ctx.set(dut.rx[node].ready, 1)
            for node, (at, data) in list(waiting.items()):
                ctx.set(dut.tx[node].valid, cycle >= at)
                ctx.set(dut.tx[node].payload, {"dest": 1, "data": data})
                if cycle >= at and ctx.get(dut.tx[node].ready):
                    del waiting[node]
            await ctx.tick()
            for node in offers:
                if node not in waiting:
                    ctx.set(dut.tx[node].valid, 0)

    _run(dut, bench, vcd)
    signals = {}
    for n in (2, 0):
        ni = f"{TOP}.ni{n}"
        signals |= {
            f"tx[{n}].valid": f"{ni}.tx__valid",
            f"inject{n} head": f"{ni}.up__head",
            f"inject{n} data": f"{ni}.up__data",
            f"inject{n} ack": f"{ni}.up__ack",
            f"tx_reject[{n}]": f"{ni}.tx_reject",
            f"tx_done[{n}]": f"{ni}.tx_done",
        }
    ni1 = f"{TOP}.ni1"
    signals |= {
        "eject1 head": f"{ni1}.down__head",
        "eject1 data": f"{ni1}.down__data",
        "eject1 ack": f"{ni1}.down__ack",
        "rx[1].valid": f"{ni1}.rx__valid",
        "rx[1].data": f"{ni1}.rx__payload",
    }
    rows = {k: v[:cycles] for k, v in read_vcd(vcd, signals, clock=f"{TOP}.clk").items()}
    # rx.payload is not defined while rx.valid is low: drawn blank there.
    data, valid = rows["rx[1].data"], rows["rx[1].valid"]
    rows["rx[1].data"] = [d if v else 0 for d, v in zip(data, valid, strict=True)]
    return Trace(
        "circuit-tree, 4 nodes: two heads meet at node 1's down port; the one dropped is not "
        "acknowledged and is sent again",
        rows,
        buses={"inject2 data", "inject0 data", "eject1 data", "rx[1].data"},
        notes=[
            "3: node 2's head goes up; 5: node 0's, which turns at the leaf router: both want",
            "node 1's down port at 6. Node 0's is granted (on the eject link 6-7, ack 7, back",
            "at node 0 at 12: tx_done 13); node 2's is dropped: no ack at 10, tx_reject 11,",
            "sent again from its slot at 12: delivered 15-16, ack 16, back at 19: tx_done 20.",
        ],
    )


def leiserson_stream_cycle(vcd: str) -> Trace:
    """Four leaves, w = 4: leaf 0 sends to leaf 3 and leaf 1 to leaf 2 in one delivery cycle;
    leaf 3's receiver is not ready for 8 cycles after its message arrives, which holds back
    ``cycle_ready``."""
    from .hdl.leiserson_stream import LeisersonStreamTree
    from .sim.models.leiserson_schedule import plan_cycle

    dut = LeisersonStreamTree(4, w=4, seed=0)
    messages = [(0, 3), (1, 2)]
    plan = plan_cycle(dut.layout, messages, [0, 1])
    beats = {
        p.src: {
            "header": int("".join(map(str, p.header)), 2),
            "header_len": len(p.header),
            "data": 0xA5 if p.src == 0 else 0x3C,
        }
        for p in plan.messages
    }
    stall_until = {"cycles": None}
    cycles = dut.cycle_length + 12

    async def bench(ctx):
        pending = dict(beats)
        started = None
        for cycle in range(cycles):
            for leaf in range(4):
                offering = leaf in pending and cycle >= 1
                ctx.set(dut.tx[leaf].valid, offering)
                if offering:
                    ctx.set(dut.tx[leaf].payload, pending[leaf])
            starting = not pending and started is None
            ctx.set(dut.cycle_valid, starting)
            if ctx.get(dut.rx[3].valid) and stall_until["cycles"] is None:
                stall_until["cycles"] = cycle + 8
            ready = stall_until["cycles"] is not None and cycle >= stall_until["cycles"]
            ctx.set(dut.rx[3].ready, ready)
            ctx.set(dut.rx[2].ready, 1)
            for leaf in list(pending):
                if ctx.get(dut.tx[leaf].ready) and cycle >= 1:
                    del pending[leaf]
            if starting and ctx.get(dut.cycle_ready):
                started = cycle
            await ctx.tick()

    _run(dut, bench, vcd)
    rows = read_vcd(
        vcd,
        {
            "tx[0].valid": f"{TOP}.tx__0__valid",
            "tx[0].ready": f"{TOP}.tx__0__ready",
            "cycle_valid": f"{TOP}.cycle_valid",
            "cycle_ready": f"{TOP}.cycle_ready",
            "start": f"{TOP}.tree.start",
            "send[0]": f"{TOP}.tree.send__0",
            "send[1]": f"{TOP}.tree.send__1",
            "recv[2]": f"{TOP}.tree.recv__2",
            "recv[3]": f"{TOP}.tree.recv__3",
            "rx[2].valid": f"{TOP}.rx__2__valid",
            "rx[3].valid": f"{TOP}.rx__3__valid",
            "rx[3].ready": f"{TOP}.rx__3__ready",
            "rx[3].data": f"{TOP}.rx__3__payload",
        },
        clock=f"{TOP}.clk",
    )
    return Trace(
        f"Leiserson tree behind stream ports, 4 leaves: one delivery cycle of "
        f"{dut.cycle_length} cycles, 0 -> 3 (0xa5) and 1 -> 2 (0x3c)",
        {k: v[:cycles] for k, v in rows.items()},
        buses={"rx[3].data"},
        notes=["rx[3] waits 8 cycles for its receiver; cycle_ready rises only once it is taken."],
    )
