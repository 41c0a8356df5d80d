"""A scripted HTTP server on 127.0.0.1 for fault tests (a SPARQL endpoint by default, or an LM's chat
completions): each request gets the next scripted answer."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

XML_OK = b"""<?xml version="1.0"?>
<sparql xmlns="http://www.w3.org/2005/sparql-results#"><head><variable name="e"/><variable name="name"/></head>
<results><result><binding name="e"><uri>http://rdf.freebase.com/ns/m.0abc</uri></binding>
<binding name="name"><literal xml:lang="en">Parasite</literal></binding></result></results></sparql>"""


class ScriptedServer:
    """Answers each request with the next scripted (status, body, delay); records what it was asked."""

    def __init__(self, script: list[tuple[int, bytes, float]], *, content_type: str = "application/sparql-results+xml",
                 default: bytes = XML_OK, port: int = 0) -> None:
        self.script, self.requests = list(script), []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, query: str) -> None:
                server.requests.append((self.command, query))
                status, body, delay = server.script.pop(0) if server.script else (200, default, 0.0)
                time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self):
                self._answer(parse_qs(urlparse(self.path).query).get("query", [""])[0])

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length).decode()
                self._answer(body if body.startswith("{") else parse_qs(body).get("query", [""])[0])

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.httpd.server_port
        self.url = f"http://127.0.0.1:{self.port}/sparql"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
