#!/usr/bin/env python3
"""A loopback HTTP server for msomni's remote-source tests and bench: serves a directory
(GET and HEAD, single byte ranges with 206/416, ETag) or forwards to an upstream store (an
S3 server), and injects faults on a fixed schedule: every Nth request gets the next fault of
a list. Faults: 503 (SlowDown), 500, 429, reset (the connection is cut before any answer),
short (the body stops halfway, the announced length unchanged), stall (no answer for
--stall-s seconds, then the connection is cut).

Counts of requests and faults go to --stats (JSON) at every request, so a test reads what
was injected. Stops on SIGTERM/SIGINT.

  fault_proxy.py --port 8080 --serve DIR [--every 3 --faults 503,reset,short] [--stats f.json]
  fault_proxy.py --port 8081 --upstream http://127.0.0.1:4568 [--every 5 --faults short]
  --host ADDR binds another address (default 127.0.0.1); --delay-ms N waits N ms before every
  answer (a round trip's latency where tc netem is not available).
"""
import argparse
import hashlib
import http.client
import json
import os
import re
import signal
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

ARGS = None
LOCK = threading.Lock()
STATS = {"requests": 0, "faults": {}, "bytes": 0}


def write_stats():
    if ARGS.stats:
        tmp = ARGS.stats + ".tmp"
        with open(tmp, "w") as f:
            json.dump(STATS, f)
        os.replace(tmp, ARGS.stats)


def next_fault():
    with LOCK:
        STATS["requests"] += 1
        n = STATS["requests"]
        fault = None
        if ARGS.every > 0 and ARGS.faults and n % ARGS.every == 0:
            kinds = ARGS.faults.split(",")
            fault = kinds[(n // ARGS.every - 1) % len(kinds)]
            STATS["faults"][fault] = STATS["faults"].get(fault, 0) + 1
        write_stats()
        return fault


def count_bytes(n):
    with LOCK:
        STATS["bytes"] += n


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def setup(self):
        super().setup()
        # Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm and
        # the client's delayed ACK add ~40 ms to every answer.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def cut(self):
        # An abrupt reset: SO_LINGER 0 makes close() send RST.
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.close_connection = True
        try:
            self.connection.close()
        except OSError:
            pass

    def status_only(self, code, reason_body):
        body = reason_body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        if code in (503, 429):
            self.send_header("Retry-After", "0")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def inject(self, fault):
        if fault == "503":
            self.status_only(503, "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>")
        elif fault == "500":
            self.status_only(500, "<Error><Code>InternalError</Code></Error>")
        elif fault == "429":
            self.status_only(429, "<Error><Code>TooManyRequests</Code></Error>")
        elif fault == "reset":
            self.cut()
        elif fault == "stall":
            time.sleep(ARGS.stall_s)
            self.cut()
        else:
            return False
        return True

    def send_body(self, code, headers, body, short):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "HEAD":
            return
        if short and len(body) > 1:
            # Half the announced body, then an orderly close: the client sees a short body.
            half = len(body) // 2
            self.wfile.write(body[:half])
            self.wfile.flush()
            count_bytes(half)
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            return
        self.wfile.write(body)
        count_bytes(len(body))

    def handle_any(self):
        if ARGS.delay_ms > 0:
            time.sleep(ARGS.delay_ms / 1000.0)  # a round trip's latency before any answer
        fault = next_fault()
        if fault and self.inject(fault):
            return
        short = fault == "short"
        if ARGS.upstream:
            return self.forward(short)
        return self.serve_file(short)

    def serve_file(self, short):
        path = os.path.normpath(os.path.join(ARGS.serve, unquote(urlsplit(self.path).path).lstrip("/")))
        root = os.path.abspath(ARGS.serve)
        if not os.path.abspath(path).startswith(root) or not os.path.isfile(path):
            return self.status_only(404, "not found")
        st = os.stat(path)
        etag = '"' + hashlib.md5(f"{st.st_size}-{st.st_mtime_ns}".encode()).hexdigest() + '"'
        size = st.st_size
        rng = self.headers.get("Range")
        headers = [("ETag", etag), ("Accept-Ranges", "bytes"), ("Content-Type", "application/octet-stream")]
        if rng:
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip())
            if not m:
                return self.status_only(416, "bad range")
            first = int(m.group(1))
            last = int(m.group(2)) if m.group(2) else size - 1
            if first >= size:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            last = min(last, size - 1)
            with open(path, "rb") as f:
                f.seek(first)
                body = f.read(last - first + 1)
            headers.append(("Content-Range", f"bytes {first}-{last}/{size}"))
            return self.send_body(206, headers, body, short)
        if self.command == "HEAD":
            self.send_response(200)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            return
        with open(path, "rb") as f:
            body = f.read()
        return self.send_body(200, headers, body, short)

    def forward(self, short):
        up = urlsplit(ARGS.upstream)
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection",)}
        length = int(self.headers.get("Content-Length", "0") or 0)
        data = self.rfile.read(length) if length else None
        try:
            conn.request(self.command, self.path, body=data, headers=headers)
            r = conn.getresponse()
            body = r.read()
        except OSError:
            return self.cut()
        finally:
            conn.close()
        out = [(k, v) for k, v in r.getheaders() if k.lower() not in ("content-length", "connection", "transfer-encoding")]
        if self.command == "HEAD":
            self.send_response(r.status)
            for k, v in out:
                self.send_header(k, v)
            self.send_header("Content-Length", r.getheader("Content-Length", "0"))
            self.end_headers()
            return
        return self.send_body(r.status, out, body, short)

    do_GET = handle_any
    do_HEAD = handle_any
    do_PUT = handle_any
    do_POST = handle_any
    do_DELETE = handle_any


class Server(ThreadingHTTPServer):
    # socketserver's backlog of 5 drops the SYNs of many clients connecting at once (each
    # retried a second later): a store takes many parallel connections.
    request_queue_size = 256

    def handle_error(self, request, client_address):
        # A client that went away (reset, broken pipe) is no error of the server's.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--delay-ms", type=float, default=0.0,
                   help="latency added before every answer (a round trip where netem is not available)")
    p.add_argument("--serve")
    p.add_argument("--upstream")
    p.add_argument("--every", type=int, default=0)
    p.add_argument("--faults", default="")
    p.add_argument("--stall-s", type=float, default=5.0)
    p.add_argument("--stats")
    ARGS = p.parse_args()
    if bool(ARGS.serve) == bool(ARGS.upstream):
        sys.exit("one of --serve DIR and --upstream URL")
    server = Server((ARGS.host, ARGS.port), Handler)
    server.daemon_threads = True
    stop = lambda *_: threading.Thread(target=server.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    write_stats()
    server.serve_forever()
    server.server_close()


if __name__ == "__main__":
    main()
