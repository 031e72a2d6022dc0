"""What another application does to a stream fgraph syncs through: publish a message that is no
fgraph record (tests/bridges/test_sync_quarantine.py, the adapter contract; issue 48 item 3)."""

from __future__ import annotations

import asyncio

from fgraph.bridges.sync import adapters


def publish_foreign(url: str, subject: str, data: bytes, headers: dict | None = None) -> int:
    """Publish ``data`` on ``subject`` (after the stream's name: "other", or a store id) of the log
    ``url`` names, as a plain client would; returns its sequence."""
    adapter = adapters.adapter_for(url)
    if adapter.name == "memory":
        with adapters.open_log(url) as log:
            return log.publish_foreign(subject, data, headers)
    import nats
    from fgraph.bridges.sync.adapters.nats import parse_url
    server, stream = parse_url(url)

    async def go() -> int:
        client = await nats.connect(server, connect_timeout=5)
        try:
            ack = await client.jetstream(timeout=10).publish(f"{stream}.{subject}", data, stream=stream,
                                                              headers=headers)
            return ack.seq
        finally:
            await client.close()
    return asyncio.run(go())
