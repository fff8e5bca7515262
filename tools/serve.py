#!/usr/bin/env python3
"""serve.py - a static file server for the RLX pages (standard library only).

Serves the repository's web/ folder with the MIME types ES modules and wasm
need, binds 0.0.0.0 by default so a phone on the same network can open the
LAN URL it prints, and refuses any path that would leave the served root
(403).  A directory without its trailing slash is redirected to the same
path on this server (the Location always starts with a single "/", never
"//host"); an idle connection is closed after 20 s; at most 64 connections
are served at once and any beyond that get a 503 and are closed.  With
--tls it serves https with a self-signed certificate made once with
`openssl` into build/tls/ (localhost, 127.0.0.1 and the LAN address in its
subjectAltName) and reused afterwards; a certificate that lacks the current
LAN address is made again.

  python3 tools/serve.py [--port N] [--host ADDR] [--root DIR] [--open PAGE]
                         [--tls] [--tls-dir DIR] [--quiet]

--port 0 picks a free port; the first line printed is always
"serving DIR on http(s)://HOST:PORT/" so scripts can read the port.
"""
import argparse
import http.server
import ipaddress
import os
import posixpath
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import urllib.parse
import webbrowser

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_ROOT = os.path.join(REPO, "web")
TLS_DIR = os.path.join(REPO, "build", "tls")
IDLE_TIMEOUT = 20      # seconds a connection may stay silent (mid-request or between keep-alive requests)
MAX_CONNECTIONS = 64   # connections served at once (one thread each); more get a 503 and are closed
BACKLOG = 128          # accept queue

MIME = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json; charset=utf-8",
    ".map": "application/json; charset=utf-8",
    ".wasm": "application/wasm",
    ".ts": "text/plain; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".md": "text/plain; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".ico": "image/x-icon",
    ".wgsl": "text/plain; charset=utf-8",
    ".bin": "application/octet-stream",
    ".gz": "application/gzip",
}


def lan_address():
    """The address other machines on the LAN reach us at, or None."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))  # UDP connect sends nothing; it only picks a route
            addr = s.getsockname()[0]
            if not addr.startswith("127."):
                return addr
    except OSError:
        pass
    try:
        addr = socket.gethostbyname(socket.gethostname())
        if not addr.startswith("127."):
            return addr
    except OSError:
        pass
    return None


class Handler(http.server.BaseHTTPRequestHandler):
    root = DEFAULT_ROOT
    quiet = False
    server_version = "rlx-serve"
    sys_version = ""
    protocol_version = "HTTP/1.1"  # keep-alive: every response has a Content-Length
    timeout = IDLE_TIMEOUT  # socket timeout: a stalled client is dropped (StreamRequestHandler.setup)

    def log_message(self, fmt, *args):
        if not self.quiet:
            sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

    def send_text(self, code, text):
        body = ("%d %s\n" % (code, text)).encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def resolve(self, raw_path):
        """(status, file): 200 with a file under root, or 400/403/404."""
        path = raw_path.split("?", 1)[0].split("#", 1)[0]  # not urlsplit: "//x/.." is no host here
        try:
            path = urllib.parse.unquote(path, errors="strict")
        except UnicodeDecodeError:
            return 400, None
        if "\0" in path:
            return 400, None
        parts = path.replace("\\", "/").split("/")
        if ".." in parts:
            return 403, None
        rel = posixpath.normpath("/" + "/".join(p for p in parts if p not in ("", ".")))
        root = os.path.realpath(self.root)
        full = os.path.realpath(os.path.join(root, rel.lstrip("/")))
        if full != root and not full.startswith(root + os.sep):
            return 403, None  # e.g. a symlink pointing outside the root
        if os.path.isdir(full):
            if not path.endswith("/"):
                # The normalized path, not the raw one: "/%2fsite" must not become "//site/",
                # which a browser reads as another host.
                return 301, rel.rstrip("/") + "/"
            full = os.path.join(full, "index.html")
        if not os.path.isfile(full):
            return 404, None
        return 200, full

    def do_GET(self):
        status, target = self.resolve(self.path)
        if status == 301:
            location = urllib.parse.quote(target)
            if not location.startswith("/") or location.startswith("//"):
                self.send_text(400, "Bad Request")  # never a redirect off this server
                return
            self.send_response(301)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if status != 200:
            self.send_text(status, {400: "Bad Request", 403: "Forbidden", 404: "Not Found"}[status])
            return
        ext = os.path.splitext(target)[1].lower()
        try:
            f = open(target, "rb")
        except OSError:
            self.send_text(404, "Not Found")
            return
        with f:
            size = os.fstat(f.fileno()).st_size
            self.send_response(200)
            self.send_header("Content-Type", MIME.get(ext, "application/octet-stream"))
            self.send_header("Content-Length", str(size))
            self.send_header("Cache-Control", "no-cache")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            if self.command != "HEAD":
                try:
                    shutil.copyfileobj(f, self.wfile)
                except (BrokenPipeError, ConnectionResetError):
                    pass

    def do_HEAD(self):
        self.do_GET()

    def not_allowed(self):
        self.send_text(405, "Method Not Allowed")

    do_POST = do_PUT = do_DELETE = do_PATCH = not_allowed


class Server(http.server.ThreadingHTTPServer):
    """One thread per connection, at most max_connections of them (the
    others get a 503 and are closed at once); with ssl_context set, the TLS
    handshake happens in that thread, so a stalled client cannot block the
    others."""
    daemon_threads = True
    ssl_context = None
    request_queue_size = BACKLOG
    max_connections = MAX_CONNECTIONS

    def __init__(self, *args, **kwargs):
        self.slots = threading.BoundedSemaphore(self.max_connections)
        super().__init__(*args, **kwargs)

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):
            self.refuse(request)
            return
        try:
            super().process_request(request, client_address)
        except Exception:
            self.slots.release()  # e.g. no thread could be started
            self.shutdown_request(request)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def refuse(self, request):
        """A short 503 (plain HTTP; best effort, never waits on the client), then close."""
        try:
            request.settimeout(0)
            if self.ssl_context is None:
                request.send(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
                             b"Content-Length: 25\r\nConnection: close\r\nRetry-After: 1\r\n\r\n"
                             b"503 too many connections\n")
        except OSError:
            pass
        self.shutdown_request(request)

    def finish_request(self, request, client_address):
        if self.ssl_context is not None:
            try:
                request.settimeout(30)
                request = self.ssl_context.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                return  # e.g. a browser that refused the self-signed certificate
        super().finish_request(request, client_address)


def cert_has(cert, names):
    """True when openssl shows every name in the certificate's SAN."""
    try:
        text = subprocess.run(["openssl", "x509", "-in", cert, "-noout", "-text"], capture_output=True,
                              text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return False
    return all(n in text for n in names)


def ensure_certificate(lan, tls_dir):
    """tls_dir/{cert,key}.pem, made with openssl unless a fitting one exists."""
    cert = os.path.join(tls_dir, "cert.pem")
    key = os.path.join(tls_dir, "key.pem")
    sans = ["DNS:localhost", "IP:127.0.0.1"] + (["IP:" + lan] if lan else [])
    wanted = ["DNS:localhost", "IP Address:127.0.0.1"] + (["IP Address:" + lan] if lan else [])
    if os.path.isfile(cert) and os.path.isfile(key) and cert_has(cert, wanted):
        print("tls: reusing %s" % os.path.relpath(cert, REPO))
        return cert, key
    if not shutil.which("openssl"):
        sys.exit("serve.py: --tls needs the openssl command (Debian package openssl)")
    os.makedirs(tls_dir, exist_ok=True)
    cmd = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "825",
           "-keyout", key, "-out", cert, "-subj", "/CN=RLX local server",
           "-addext", "subjectAltName=" + ",".join(sans),
           "-addext", "basicConstraints=critical,CA:FALSE",
           "-addext", "extendedKeyUsage=serverAuth"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("serve.py: openssl failed:\n" + result.stderr)
    os.chmod(key, 0o600)
    print("tls: made a self-signed certificate for %s in %s" % (", ".join(sans), os.path.relpath(tls_dir, REPO)))
    return cert, key


def can_open_browser():
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def main(argv=None):
    ap = argparse.ArgumentParser(description="Serve the RLX pages (web/) for browsers on this machine and the LAN.")
    ap.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    ap.add_argument("--host", default="0.0.0.0", help="address to bind (default 0.0.0.0: every interface)")
    ap.add_argument("--root", default=DEFAULT_ROOT, help="folder to serve (default web/)")
    ap.add_argument("--open", metavar="PAGE", default=None, help="open PAGE in a browser when one is available")
    ap.add_argument("--tls", action="store_true", help="https with a self-signed certificate in build/tls/")
    ap.add_argument("--tls-dir", default=TLS_DIR, help="where the certificate lives (default build/tls/)")
    ap.add_argument("--quiet", action="store_true", help="do not log requests")
    args = ap.parse_args(argv)
    if not 0 <= args.port <= 65535:
        ap.error("--port must be between 0 and 65535")
    root = os.path.realpath(args.root)
    if not os.path.isdir(root):
        ap.error("no such folder: %s" % args.root)
    try:
        ipaddress.ip_address(args.host)
    except ValueError:
        ap.error("--host must be an IP address, got %r" % args.host)

    Handler.root = root
    Handler.quiet = args.quiet
    Server.address_family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    try:
        httpd = Server((args.host, args.port), Handler)
    except OSError as e:
        sys.exit("serve.py: cannot listen on %s:%d: %s" % (args.host, args.port, e.strerror or e))
    port = httpd.server_address[1]
    lan = lan_address()
    scheme = "http"
    if args.tls:
        cert, key = ensure_certificate(lan, os.path.abspath(args.tls_dir))
        httpd.ssl_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        httpd.ssl_context.load_cert_chain(cert, key)
        scheme = "https"

    page = (args.open or "index.html").lstrip("/")
    print("serving %s on %s://%s:%d/" % (root, scheme, args.host, port))
    print("  local: %s://localhost:%d/%s" % (scheme, port, page))
    if lan and args.host in ("0.0.0.0", "::", lan):
        print("  LAN:   %s://%s:%d/%s" % (scheme, lan, port, page))
    if args.tls:
        print("  (self-signed certificate: the browser warns once)")
    if args.open:
        url = "%s://localhost:%d/%s" % (scheme, port, page)
        if can_open_browser() and webbrowser.open(url):
            print("opened %s" % url)
        else:
            print("no browser available here: open %s yourself" % url)
    sys.stdout.flush()
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()


if __name__ == "__main__":
    main()
