"""A TCP server on 127.0.0.1 outside any sandbox, for the sandbox network tests (the ``tcp_server`` fixture)."""

from __future__ import annotations

import socket
import threading
import time


class TcpServer:
    """A TCP server on 127.0.0.1 OUTSIDE the sandbox that records what each connection sent."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    self.received.append(conn.recv(100))
                except OSError:
                    self.received.append(b"")

    @property
    def probe(self) -> str:
        """A shell command that connects, sends ``hello`` and prints ``connected``."""
        return f"exec 3<>/dev/tcp/127.0.0.1/{self.port} && echo hello >&3 && echo connected"

    def wait_received(self, timeout_s: float = 5.0) -> list[bytes]:
        deadline = time.monotonic() + timeout_s
        while not self.received and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.received

    def close(self):
        self.stop = True
        self.thread.join(2)
        self.sock.close()
