#!/usr/bin/env python3
"""HTTP fault-injecting proxy for the storage retry tests (stdlib only).

    faultproxy.py UPSTREAM_HOST:PORT PORTFILE

Listens on a free 127.0.0.1 port (written to PORTFILE) and forwards every
request byte-for-byte (Host header included, so SigV4 signatures stay
valid) to UPSTREAM, except as told by its plan, set without auth:

    GET /__fault/plan?actions=503,500,pass   actions for the next requests
    GET /__fault/count                       requests seen (not control)

Actions: pass | 500 | 503 | reset (read half the body, then RST: a server
killed mid-upload) | slow (answer nothing for 3 s, then close) | cut
(forward, relay half the response body, then RST). Once the plan is used
up every request passes. Stop it by PID.
"""
import socket
import socketserver
import struct
import sys
import threading
import time
import urllib.parse

UPSTREAM = None
LOCK = threading.Lock()
PLAN = []
COUNT = 0


def read_head(f):
    lines = []
    while True:
        line = f.readline(65536)
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            return lines
        lines.append(line)


def header(lines, name):
    for line in lines[1:]:
        k, _, v = line.decode("latin-1").partition(":")
        if k.strip().lower() == name:
            return v.strip()
    return None


def read_chunked(f):
    out = b""
    while True:
        size_line = f.readline()
        out += size_line
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while True:
                t = f.readline()
                out += t
                if t in (b"\r\n", b"\n", b""):
                    return out
        out += f.read(size + 2)


def rst(sock):
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class Handler(socketserver.StreamRequestHandler):
    def reply(self, status, body, ctype="text/plain"):
        reason = {200: "OK", 500: "Internal Server Error", 503: "Service Unavailable"}[status]
        self.wfile.write(("HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
                          % (status, reason, ctype, len(body))).encode() + body)
        self.wfile.flush()

    def handle(self):
        global COUNT, PLAN
        while True:
            head = read_head(self.rfile)
            if not head:
                return
            method, target = head[0].decode("latin-1").split()[:2]
            length = int(header(head, "content-length") or 0)
            if target.startswith("/__fault/"):
                self.rfile.read(length)
                url = urllib.parse.urlparse(target)
                if url.path == "/__fault/plan":
                    q = urllib.parse.parse_qs(url.query)
                    with LOCK:
                        PLAN = [a for a in q.get("actions", [""])[0].split(",") if a]
                    self.reply(200, b"ok\n")
                else:
                    with LOCK:
                        n = COUNT
                    self.reply(200, b"%d\n" % n)
                continue
            with LOCK:
                COUNT += 1
                action = PLAN.pop(0) if PLAN else "pass"
            if action == "reset":
                self.rfile.read(length // 2)
                rst(self.connection)
                return
            body = self.rfile.read(length)
            if action in ("500", "503"):
                code = "InternalError" if action == "500" else "SlowDown"
                self.reply(int(action), ("<?xml version=\"1.0\"?><Error><Code>%s</Code>"
                                         "<Message>injected by faultproxy</Message></Error>"
                                         % code).encode(), "application/xml")
                continue
            if action == "slow":
                time.sleep(3)
                self.connection.close()
                return
            # Expect is added by curl, not signed: drop it (no 100 to relay)
            fwd = [l for l in head if not l.lower().startswith(b"expect:")]
            up = socket.create_connection(UPSTREAM)
            up.sendall(b"".join(fwd) + b"\r\n" + body)
            uf = up.makefile("rb")
            rhead = read_head(uf)
            while rhead and rhead[0].split()[1].startswith(b"1"):
                rhead = read_head(uf)
            status = int(rhead[0].split()[1])
            if method == "HEAD" or status in (204, 304):
                rbody = b""
            elif (header(rhead, "transfer-encoding") or "").lower() == "chunked":
                rbody = read_chunked(uf)
            else:
                rbody = uf.read(int(header(rhead, "content-length") or 0))
            up.close()
            out = b"".join(rhead) + b"\r\n"
            if action == "cut":
                self.wfile.write(out + rbody[: len(rbody) // 2])
                self.wfile.flush()
                rst(self.connection)
                return
            self.wfile.write(out + rbody)
            self.wfile.flush()


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global UPSTREAM
    host, port = sys.argv[1].rsplit(":", 1)
    UPSTREAM = (host, int(port))
    srv = Server(("127.0.0.1", 0), Handler)
    with open(sys.argv[2] + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    import os
    os.rename(sys.argv[2] + ".tmp", sys.argv[2])
    srv.serve_forever()


if __name__ == "__main__":
    main()
