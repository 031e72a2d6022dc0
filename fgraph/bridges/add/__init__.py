"""The library behind ``fgraph add``: ``data_source`` reads the DATA argument with bounded memory,
``ingest`` turns documents into transactions.
"""
