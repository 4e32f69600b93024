"""Run the app on uvicorn in a background thread of this process (benchmarks, notebooks, tests).

Example:
    >>> from memlab.app import open_memlab
    >>> from memlab.testing import FakeEmbedder, ScriptedJudge
    >>> from memlab.serve import create_app
    >>> lab = open_memlab(":memory:", embedder=FakeEmbedder(), judge=ScriptedJudge())
    >>> with ThreadedServer(create_app(lab)) as server:
    ...     import httpx
    ...     httpx.get(server.url + "/health").json()["status"]
    'ok'
    >>> lab.close()
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from memlab.errors import BackendError

__all__ = ["ThreadedServer"]


class ThreadedServer:
    """uvicorn serving ``app`` on ``host`` and a free port (or ``port``) until :meth:`stop`.

    Attributes:
        url: ``http://host:port`` once constructed (the socket is bound at once, so the port is known).
    """

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning") -> None:
        import uvicorn

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # asyncio sets TCP_NODELAY only on sockets made with IPPROTO_TCP; without it every answer after a
        # connection's first waits ~40 ms for the client's delayed ACK (Nagle), which benchmarks would then measure
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.bind((host, port))
        self.url = f"http://{host}:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True,
                                       name="memlab-uvicorn")

    def start(self, timeout: float = 60.0) -> ThreadedServer:
        """Start and wait until the server accepts requests (its lifespan has run).

        Raises:
            BackendError: the server did not start within ``timeout`` seconds.
        """
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.sock.close()
                raise BackendError(f"uvicorn did not start on {self.url} within {timeout:.0f} s.")
            time.sleep(0.02)
        return self

    def stop(self, timeout: float = 120.0) -> None:
        """Ask uvicorn to shut down (the lifespan drains the agent) and wait for it.

        Raises:
            BackendError: the server did not stop within ``timeout`` seconds.
        """
        self.server.should_exit = True
        self.thread.join(timeout=timeout)
        self.sock.close()
        if self.thread.is_alive():
            raise BackendError(f"uvicorn on {self.url} did not shut down within {timeout:.0f} s.")

    def __enter__(self) -> ThreadedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
