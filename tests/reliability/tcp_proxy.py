"""A loopback TCP proxy a test can kill and bring back on the same port: a service pointed at it
sees its backend (PostgreSQL here) vanish mid-run, live connections cut and new ones refused,
then come back where it was, without the backend itself being touched.

    proxy = TcpProxy("127.0.0.1", 5432).start()   # listens on proxy.port (free, loopback)
    proxy.stop()                                   # refuse new connections, cut the live ones
    proxy.start()                                  # listen again on the same port
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class TcpProxy:
    def __init__(self, target_host: str, target_port: int, *, port: int = 0) -> None:
        self.target = (target_host, target_port)
        self.port = port
        self._listener: socket.socket | None = None
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self.accepted = 0  # connections accepted over the proxy's life (all its starts)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> TcpProxy:
        assert self._listener is None, "already listening"
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        deadline = time.monotonic() + 10
        while True:
            try:
                listener.bind(("127.0.0.1", self.port))
                break
            except OSError:
                # The port of a stopped proxy can linger a moment; it is ours, so wait for it.
                if not self.port or time.monotonic() > deadline:
                    listener.close()
                    raise
                time.sleep(0.05)
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), name="tcp-proxy-accept", daemon=True).start()
        return self

    def stop(self) -> None:
        """Refuse new connections and cut every live one (both ends see the connection reset)."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            conns, self._conns = self._conns, set()
        for s in conns:
            with contextlib.suppress(OSError):
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    @property
    def running(self) -> bool:
        return self._listener is not None

    # ------------------------------------------------------------------ plumbing
    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # stopped
            if self._listener is not listener:
                client.close()
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns.update((client, upstream))
                self.accepted += 1
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), name="tcp-proxy-pipe", daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._conns.discard(src)
                self._conns.discard(dst)
            src.close()
