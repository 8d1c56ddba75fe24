"""The bidelta network (:class:`fattree.hdl.rn1.bidelta.RN1Bidelta`) with an endpoint
(:class:`fattree.hdl.rn1.endpoint.RN1Endpoint`) on every node: ``rn1-bidelta-stream``.

The cycle-exact reference is :class:`fattree.sim.models.rn1_endpoint.RN1BideltaStreamModel`.
"""

from amaranth import Module
from amaranth.lib import wiring

from ...spec.rn1_endpoint import (
    RN1_BIDELTA_STREAM,
    TIMEOUT,
    check_dead_outputs,
    check_timeout,
    endpoint_seed,
    path_routers,
)
from .._validation import validates_parameters
from .bidelta import RN1Bidelta
from .endpoint import RN1Endpoint, attach_endpoints, stream_members

__all__ = ["RN1BideltaStream"]


class RN1BideltaStream(wiring.Component):
    """The bidelta network (:class:`RN1Bidelta`) with an :class:`RN1Endpoint` on every
    endpoint: streams of messages in and out.

    Parameters
    ----------
    endpoints : int
        4, 16, 64 or 256.
    seed : int
        Seed of the wiring, the routers' LFSRs and the endpoints' (``>= 0``).
    retry : str or int
        The endpoints' retry strategy (``"immediate"``, ``"round"``, ``"backoff"``).
    max_bytes : int
        Payload bytes per message at most, ``1 .. 64``.
    timeout : int
        The endpoints' status timeout (:class:`RN1Endpoint`).
    dead_outputs : list of int
        A fault, for tests: endpoint output channels (``2 * endpoint + link``) cut from the
        network, so nothing crosses them either way.

    Attributes
    ----------
    tx : In(tx_signature(endpoints)).array(endpoints)
    rx : Out(rx_signature()).array(endpoints)
    sent, retries, received, dropped, timeouts : Out(16).array(endpoints)
        Each endpoint's counters (:class:`RN1Endpoint`).

    Notes
    -----
    For ``retry="round"``, every endpoint's ``go`` rises one cycle after a cycle in which no
    endpoint had a transmission under way.
    """

    @validates_parameters
    def __init__(
        self, endpoints=16, seed=1, retry="immediate", max_bytes=8, timeout=TIMEOUT, dead_outputs=()
    ):
        self.endpoints = RN1_BIDELTA_STREAM.check("endpoints", endpoints)
        self.seed = RN1_BIDELTA_STREAM.check("seed", seed)
        self.retry = RN1_BIDELTA_STREAM.check("retry", retry)
        self.max_bytes = RN1_BIDELTA_STREAM.check("max_bytes", max_bytes)
        # The contract's range, and at least the longest wait for a status in this network.
        self.timeout = check_timeout(timeout, path_routers("bidelta", self.endpoints))
        self.dead_outputs = check_dead_outputs(dead_outputs, self.endpoints)
        super().__init__(stream_members(endpoints))

    def elaborate(self, platform):
        m = Module()
        n = self.endpoints
        m.submodules.net = net = RN1Bidelta(n, self.seed)
        endpoints = [
            RN1Endpoint(
                n, self.retry, endpoint_seed(self.seed, e), self.max_bytes, timeout=self.timeout
            )
            for e in range(n)
        ]
        attach_endpoints(m, self, net, endpoints, self.dead_outputs)
        return m
