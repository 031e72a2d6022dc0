"""``search`` and MCP ``recall`` (spec 13 §2–§9): ``request`` checks a request, ``lists`` builds
the keyword and vector candidate lists, ``entities`` matches whole entities, ``render`` shapes the
hits, ``vector_index`` is the optional approximate index; ``run`` is the entry point.
"""
