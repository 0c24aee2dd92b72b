"""A load balancer for a cluster on loopback: every request goes to the next server, and a
server that refuses the connection (killed) is skipped, as nginx's round robin with
`proxy_next_upstream` does.  No sticky sessions: one browser's clicks alternate between the
servers, which is what the cluster tests need a real browser to go through.

It counts the requests each server answered, so a test can show both took part.
"""

from __future__ import annotations

import http.client
import itertools
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

# Headers that belong to one connection, not to the request or the answer passed along.
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host",
              "proxy-connection", "te", "trailer", "upgrade"}
ANSWER_SECONDS = 300   # a callback that waits for a build may take long


class RoundRobin(ThreadingHTTPServer):
    """Serves on a free loopback port from `start()` until `stop()`."""

    daemon_threads = True

    def __init__(self, servers: list[str]):
        super().__init__(("127.0.0.1", 0), _Forward)
        self.servers = servers             # base URLs, e.g. http://127.0.0.1:8050
        self.answered: Counter[str] = Counter()
        self._turn = itertools.count()
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> "RoundRobin":
        threading.Thread(target=self.serve_forever, daemon=True, name="round-robin").start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def next_servers(self) -> list[str]:
        """Every server once, starting with the next one's turn."""
        with self._lock:
            first = next(self._turn) % len(self.servers)
        return self.servers[first:] + self.servers[:first]


class _Forward(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: RoundRobin

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        self._forward()

    do_POST = do_GET

    def log_message(self, *_args) -> None:   # quiet: the servers log their own requests
        pass

    def _forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        for server in self.server.next_servers():
            address = urlsplit(server)
            connection = http.client.HTTPConnection(address.hostname, address.port,
                                                    timeout=ANSWER_SECONDS)
            try:
                connection.request(self.command, self.path, body, headers)
                answer = connection.getresponse()
                data = answer.read()
            except ConnectionRefusedError:   # that server is down: the next one answers
                continue
            finally:
                connection.close()
            self.server.answered[server] += 1
            self.send_response(answer.status)
            for key, value in answer.getheaders():
                if key.lower() not in HOP_BY_HOP:
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_error(502, "no server answered")
