"""Pipelined level-wise scheduler for FT(l, w) and FT(l, m, w) fat-trees (Ding et al., SC'06,
section 6; ``m`` children and ``w`` parents per switch, :class:`~fattree.spec.scheduler.
GeneralizedFatTree`).

One P_h block per link level ``h = 0 .. l-2``. Each block keeps the availability vectors
``Ulink(h, t)`` and ``Dlink(h, t)`` (``w`` bits, 1 = free) of its level in two memories
(:class:`~fattree.hdl.registered_memory.RegisteredReadMemory`, one row per switch: an
``amaranth.lib.memory.Memory`` that maps to block RAM, or on ECP5 a ``DP16KD`` with its
output register; the ``memory`` parameter chooses) and runs the paper's three steps:

* **load**: address the two memories with the request's switches ``s_h`` and ``d_h``;
* **compute**: ``Ulink(h, s_h) AND Dlink(h, d_h)``, select the lowest free port ``P_h`` with a
  priority selector, clear that bit in both vectors, and form the next level's switches
  ``s_{h+1}``, ``d_{h+1}`` (Theorem 1: a shift of the low digits and ``P_h`` as digit 0);
* **update**: write both vectors back.

The priority select yields the port one-hot (a carry chain, ``avail & ~(avail - 1)``, from
``w = 8`` up); it is encoded into ``P_h`` and digit 0 of ``s_{h+1}``, ``d_{h+1}`` after the
update register, out of the compute cycle.

A block-RAM read has a long clock-to-output time, so the read data is registered right behind
the memory (on ECP5 in the block RAM's own output register) and used one cycle later: a
request spends four cycles per level (M: read in flight, R: read data registered, forwarding
pre-selected, C: compute, U: update), and the update of level ``h`` is the load of level
``h+1``. With the input register and two cycles through the output FIFO the latency is
``4 * (l - 1) + 3`` cycles (``latency``).

One request per clock (initiation interval 1)
---------------------------------------------
Back-to-back requests may use the same switch. A request in C works on the rows as they were
when its address was sampled, at the end of its load cycle; the four requests ahead of it
write after that: the one in U now, and those that wrote one, two and three cycles ago (the
last in the very cycle the address was sampled, a read the memory leaves undefined). Their
new vectors are forwarded, newest first. Which of the older three address the same row is
compared two stages early (in M), and the newest of them that does is selected in R and
registered with the memory row; only the request just ahead is compared in R, so the loop
that limits the clock -- the vector a request writes is the vector the next one may start
from -- is only a 2:1 select, the AND, the priority select and the bit clear. The result is
exactly the sequential algorithm of Fig. 7 taken request by request, in ``keep`` failure
mode: a request refused at level ``h`` keeps the links it took below ``h`` (see
:mod:`fattree.sim.models.scheduler`).

Commands (``op`` of a request)
------------------------------
``SCHEDULE``
    Schedule ``src -> dst``; the result carries ``granted`` and ``ports`` = ``P_0 ..
    P_{l-2}`` (zero above the common level; for a refused request, the ports chosen below
    the level where it failed).
``RELEASE``
    Tear down the connection ``src -> dst`` that was granted ``ports``: its links become free
    (bits set back to 1; releasing a connection that does not exist is not detected). Pipelined
    like a request, one per clock, with the same forwarding.
``CLEAR``
    Free every link. It waits until the pipeline is empty, then writes all rows of every
    memory in parallel, one row per cycle: ``w**(l-1)`` cycles (the deepest memory's rows for
    FT(l, m, w)). The memories also start free
    after configuration, and a reset runs the same clear (``requests`` is not ready for the
    ``w**(l-1)`` cycles after it).

Every command produces one result, in order. The pipeline never stalls (no clock enables on
its datapath): results wait in an output FIFO, and ``requests`` is ready only while the FIFO
has room for everything already in flight, so back-pressure on ``results`` reaches
``requests`` without holding the pipeline.

Supported range: ``levels`` 2..6, ``w`` and ``m`` powers of two 2..64, at most 65536 switches
on a link level (the depth of its memories: ``m**(l-1-h) * w**h`` rows at level ``h``).

Modules: :mod:`.component` (the component, its input stage, the CLEAR sequencer and the
output FIFO), :mod:`.level` (one P_h block), :mod:`.priority` (the priority select),
:mod:`.layouts` (payloads and pipeline registers).
"""

from ...spec.scheduler import Op
from .component import LevelWiseScheduler
from .layouts import request_layout, result_layout

__all__ = ["Op", "LevelWiseScheduler", "request_layout", "result_layout"]
