"""Writes an agent proposes and a person decides (issue 51, docs/proposals.md): the proposal/1
record (``records``), the pending file (``pending``) and the decision that applies or rejects a
selection (``decide``)."""
