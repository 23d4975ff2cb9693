"""A real HTTP receiver on 127.0.0.1 for webhook tests: answers each request with the next scripted
(status, headers), then 200, and keeps every request (method, path, lower-cased headers, body)."""

import http.server
import threading


class Receiver:
    """Answers each request with the next (status, headers) of `answers` (then 200) and keeps what came."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, dict]] = []
        self.requests: list[tuple[str, str, dict, bytes]] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _handle(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                receiver.requests.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                                          body))
                status, headers = receiver.answers.pop(0) if receiver.answers else (200, {})
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            do_POST = do_PUT = do_DELETE = _handle

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
