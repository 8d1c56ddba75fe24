"""The fast circuit tree (``circuit-tree``, :mod:`fattree.spec.circuit_fast`): one cycle
per hop, circuits held only while a message passes, heads acknowledged over a mirror of the
forward delays (a dropped head is not), and a window of messages in flight per node.

=============  ===================================================================
module         holds
=============  ===================================================================
``router``     :class:`CircuitFastRouter`, one router ``SW(r, t)``, and the link
               signature
``interface``  :class:`CircuitFastInterface`, the network interface of one node
``tree``       :class:`CircuitFastTree`, the whole network
=============  ===================================================================
"""
