"""First divergent operator: on a failing check (or with --hil-explain), where the target's
numbers first left the reference, operator by operator in program order.

Two explainers fill in a Divergence, one per kind of program:
    hil.explain.cpu     CPU programs (portable, XNNPACK): ExecuTorch's ETDump intermediates
                        against the model's, matched through debug handles (ETRecord, Inspector)
    hil.explain.tosa    Ethos-U delegates: each delegate's TOSA graph run with every tensor kept,
                        against the quantized PyTorch model's corresponding nodes

The result names the operator in the failure message and is written as a `hil-node-errors/1`
file (hil/explore/node_errors.py), which `hil explore` draws over the graph.
"""

from __future__ import annotations

from hil.verdict.divergence import NODE_ERRORS_FORMAT, Divergence, NodeError

__all__ = ["NODE_ERRORS_FORMAT", "Divergence", "NodeError"]
