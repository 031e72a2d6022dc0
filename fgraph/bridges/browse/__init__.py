"""``fgraph browse``: a read-only Datasette view of one store. ``app`` serves it, ``pages`` are the
pages for people, ``templates/`` their HTML.
"""
