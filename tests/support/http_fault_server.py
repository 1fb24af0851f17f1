#!/usr/bin/env python3
"""An HTTP server that misbehaves, for the HTTP remote cache's tests
(tests/e2e/http_cache_test.cpp): http_fault_server.py PORT MODE, on
127.0.0.1, printing "listening" once it accepts connections.

MODE:
  500    every request answered 500 Internal Server Error
  drip   a GET answered 200 with a Content-Length of 1 MB, then one byte
         every 50 ms (a slow or stuck server); HEAD and PUT answered 500
  huge   a GET answered 200 with a Content-Length of 2**60 bytes, then
         nothing (a client must refuse it before allocating)
  chunky a GET answered 200, chunked, 64 KiB chunks without end (no length
         to refuse beforehand)
"""
import http.server
import sys
import time

MODE = sys.argv[2]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def fail(self):
        self.send_response(500)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"oops\n")

    def do_GET(self):
        if MODE == "500":
            return self.fail()
        self.send_response(200)
        if MODE == "chunky":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b"x" * 65536
            try:
                while True:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except (BrokenPipeError, ConnectionResetError):
                return
        self.send_header("Content-Length", str(2**60 if MODE == "huge" else 1 << 20))
        self.end_headers()
        try:
            while MODE == "drip":
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.05)
            time.sleep(60)
        except (BrokenPipeError, ConnectionResetError):
            return

    def do_HEAD(self):
        self.fail()

    def do_PUT(self):
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        self.fail()


server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
server.daemon_threads = True
print("listening", flush=True)
server.serve_forever()
