"""The ``fgraph browse`` command (issue 16); it registers itself on the ``cli`` group when imported."""

from __future__ import annotations
