"""The read-only SQL of ``fgraph browse``: ``sql`` the canned queries and connection, ``pages_sql``
what the pages for people read.
"""
