#!/usr/bin/env python3
"""A loopback HTTP server for the download tests (tests/test_downloads.cpp): serves the files of a
folder and misbehaves on purpose on some paths. Standard library only.

    python3 tests/tools/http_test_server.py FOLDER PORT_FILE

Listens on 127.0.0.1 on a free port, writes the port number into PORT_FILE (whole, by rename) once
it accepts connections, and serves until it is killed. Paths:
  /files/NAME          FOLDER/NAME with its Content-Length
  /short/NAME          announces FOLDER/NAME's length, sends half of it, closes the connection
  /nolength/NAME       FOLDER/NAME without Content-Length (the end is the connection's close)
  /redirect/NAME       302 to /files/NAME
  /redirect-ftp        302 to an ftp:// URL
  /loop                302 to itself
  /empty               200 with no body
  anything else        404
"""
import http.server
import os
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection: a close ends a body without length

    def log_message(self, fmt, *args):  # quiet: the tests read the client's messages
        pass

    def file_bytes(self, name):
        path = os.path.join(FOLDER, os.path.basename(name))
        if not os.path.isfile(path):
            return None
        with open(path, "rb") as f:
            return f.read()

    def redirect(self, to):
        self.send_response(302)
        self.send_header("Location", to)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        parts = self.path.split("/", 2)  # ['', 'files', 'NAME']
        kind = parts[1] if len(parts) > 1 else ""
        name = parts[2] if len(parts) > 2 else ""
        if kind == "redirect":
            return self.redirect("/files/" + name)
        if kind == "redirect-ftp":
            return self.redirect("ftp://127.0.0.1/x.pkl")
        if kind == "loop":
            return self.redirect("/loop")
        if kind == "empty":
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = self.file_bytes(name) if kind in ("files", "short", "nolength") else None
        if data is None:
            self.send_response(404)
            self.send_header("Content-Type", "text/html")
            body = b"<html><body>not found</body></html>"
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if kind != "nolength":
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[: len(data) // 2] if kind == "short" else data)
        self.wfile.flush()


def main():
    global FOLDER
    FOLDER, port_file = sys.argv[1], sys.argv[2]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
