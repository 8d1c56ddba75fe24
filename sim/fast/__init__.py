"""Fast simulators: compiled (numba) behavioural simulators for large n.

A layer of their own beside the reference models of :mod:`fattree.sim.models`: each restates
the rules of a design on flat arrays so that it scales far beyond the models (the circuit tree
to ``n = 2^20``), and each is checked against the models by the tests.

* :mod:`.circuit_rounds`: the circuit tree's delivery rounds (Strumpen and Krishnamurthy's
  round-based network), and the traffic patterns as arrays;
* :mod:`.circuit_cycles`: the circuit tree cycle by cycle, every retry strategy;
* :mod:`.schedulers`: Ding's schedulers on FT(l, w), permutation after permutation.
"""
