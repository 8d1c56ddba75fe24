"""Model-versus-design checks shared by the amaranth.sim tests and the cocotb benches.

One module per design. A check drives the design and reads its outputs through callables the
caller supplies (``read()``, ``drive(...)`` and an awaitable ``tick()``: amaranth.sim's
``ctx.get``/``ctx.set``/``ctx.tick``, or cocotb handles and ``FallingEdge``), steps the
reference model beside it and keeps score in a :class:`fattree.sim.scoreboard.Scoreboard`.
Each cycle it reads the outputs first, then drives the inputs, then waits for the next cycle,
so the outputs compared are the registered ones the model gives before its clock edge.
"""
