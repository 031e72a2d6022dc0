"""The message-log engines of ``fgraph sync`` (one module per engine)."""
