"""A fake NATS server on loopback for the TLS tests of the NATS adapter (issue 47 item 2): it
announces the INFO line the test chooses — a plain server's, or a TLS server's with
``tls_required`` dropped, as a man in the middle would — answers PING with PONG (so a client that
sent CONNECT believes it is connected) and records every byte it receives, bounded."""

from __future__ import annotations

import json
import socket
import threading

MAX_RECORDED = 1 << 20   # bytes kept from all connections together; a client sends far less before it is refused

# what a plain ``nats-server --user … --pass …`` announces (a nonce too, so a creds file would sign it)
PLAIN_INFO = {"server_id": "NFAKEPLAINSERVER", "server_name": "fake", "version": "2.10.0", "proto": 1,
              "go": "go1.22", "host": "127.0.0.1", "port": 4222, "headers": True, "auth_required": True,
              "max_payload": 1048576, "jetstream": True, "client_id": 7, "client_ip": "127.0.0.1",
              "nonce": "fake-nonce-3fa9"}
# what a ``nats-server --tls …`` announces once a man in the middle has dropped ``tls_required``
STRIPPED_TLS_INFO = {**PLAIN_INFO, "server_id": "NFAKETLSSERVER", "tls_verify": False, "tls_available": True}


class FakeNats:
    """Listens on 127.0.0.1 (a free port) until ``close``; ``received`` holds what clients sent."""

    def __init__(self, info: dict):
        self.info = info
        self.received = bytearray()
        self.connections = 0
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(8)
        self._listener.settimeout(0.1)   # so the accept loop sees ``close`` soon
        self._closed = threading.Event()
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def __enter__(self) -> FakeNats:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:   # closed
                return
            conn.settimeout(None)
            with self._lock:
                self.connections += 1
                self._open.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        info = {**self.info, "port": self.port}
        try:
            conn.sendall(b"INFO " + json.dumps(info).encode() + b"\r\n")
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                with self._lock:
                    self.received += chunk[:max(0, MAX_RECORDED - len(self.received))]
                for _ in range(chunk.count(b"PING\r\n")):
                    conn.sendall(b"PONG\r\n")
        except OSError:
            return

    def seen(self) -> bytes:
        with self._lock:
            return bytes(self.received)

    def close(self) -> None:
        self._closed.set()
        self._thread.join(timeout=5)
        self._listener.close()
        with self._lock:
            for conn in self._open:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                conn.close()
