#!/usr/bin/env python3
"""serve.py - a static file server for the RLX pages (standard library only).

Serves the repository's web/ folder with the MIME types ES modules and wasm
need, binds 0.0.0.0 by default so a phone on the same network can open the
LAN URL it prints, and refuses any path that would leave the served root
(403).  A directory without its trailing slash is redirected to the same
path on this server (the Location always starts with a single "/", never
"//host").  Hostile clients are bounded: a connection silent for
--idle-timeout seconds is closed; a request's line and headers must all
arrive within --request-deadline seconds of its first byte, however slowly
they drip (else a 408 and close), and a TLS handshake within as long; at
most --max-connections are served at once and at most --max-per-address
from one client address (any beyond get a 503 and are closed), so one
address cannot take every slot.  The limits are printed at start.  With
--tls it serves https with a self-signed certificate made once with
`openssl` into build/tls/ (localhost, 127.0.0.1 and the LAN address in its
subjectAltName) and reused afterwards; a certificate that lacks the current
LAN address is made again.  Every response carries the cross-origin
isolation headers of tools/isolation_headers.py (COOP same-origin, COEP
require-corp), so the pages are crossOriginIsolated.

  python3 tools/serve.py [--port N] [--host ADDR] [--root DIR] [--open PAGE]
                         [--tls] [--tls-dir DIR] [--quiet] [--idle-timeout S]
                         [--request-deadline S] [--max-connections N]
                         [--max-per-address N]

--port 0 picks a free port; the first line printed is always
"serving DIR on http(s)://HOST:PORT/" so scripts can read the port.
"""
import argparse
import http.server
import io
import ipaddress
import os
import posixpath
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
import webbrowser

from isolation_headers import HEADERS as ISOLATION_HEADERS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_ROOT = os.path.join(REPO, "web")
TLS_DIR = os.path.join(REPO, "build", "tls")
IDLE_TIMEOUT = 20      # seconds a connection may stay silent (mid-request or between keep-alive requests)
REQUEST_DEADLINE = 10  # seconds from a request's first byte to the end of its headers
MAX_CONNECTIONS = 128  # connections served at once (one thread each); more get a 503 and are closed
MAX_PER_ADDRESS = 48   # of those from one client address (the browser tests open at most 4 x 6)
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


def plain_response(code, reason, text, extra=""):
    """A whole short plain-text answer that closes the connection, as bytes."""
    body = "%d %s\n" % (code, text)
    return ("HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n%s\r\n%s"
            % (code, reason, len(body), extra, body)).encode()


class HeadTimeout(Exception):
    """A request's line and headers did not all arrive within the request deadline."""


class DeadlineReader(io.RawIOBase):
    """The connection's socket as a raw stream.  Each wait is at most `idle`
    seconds; once a request's first byte has come (`due` is set), each wait
    also ends at its deadline, so a drip of bytes cannot stretch it."""

    def __init__(self, sock, idle, deadline):
        self.sock, self.idle, self.deadline, self.due = sock, idle, deadline, None

    def readable(self):
        return True

    def readinto(self, buf):
        now = time.monotonic()
        if self.due is not None and now >= self.due:
            raise HeadTimeout
        self.sock.settimeout(self.idle if self.due is None else min(self.idle, self.due - now))
        try:
            n = self.sock.recv_into(buf)
        except TimeoutError:
            if self.due is not None and time.monotonic() >= self.due:
                raise HeadTimeout from None
            raise
        finally:
            self.sock.settimeout(self.idle)  # writes keep the idle timeout
        if n and self.due is None:
            self.due = time.monotonic() + self.deadline
        return n


class Handler(http.server.BaseHTTPRequestHandler):
    root = DEFAULT_ROOT
    quiet = False
    server_version = "rlx-serve"
    sys_version = ""
    protocol_version = "HTTP/1.1"  # keep-alive: every response has a Content-Length
    timeout = IDLE_TIMEOUT  # socket timeout: a stalled client is dropped (StreamRequestHandler.setup)
    request_deadline = REQUEST_DEADLINE

    def setup(self):
        super().setup()
        self.rfile.close()  # the plain socket file; ours bounds every wait of a request head
        self.head = DeadlineReader(self.connection, self.timeout, self.request_deadline)
        self.rfile = io.BufferedReader(self.head)

    def handle_one_request(self):
        self.head.due = None  # the next request's clock starts at its first byte
        super().handle_one_request()

    def handle(self):
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away
        except HeadTimeout:
            self.close_connection = True
            self.log_message("request head not complete in %g s: 408", self.request_deadline)
            try:
                self.connection.sendall(plain_response(408, "Request Timeout", "request head too slow"))
            except OSError:
                pass

    def end_headers(self):
        for name, value in ISOLATION_HEADERS:
            self.send_header(name, value)
        super().end_headers()

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
                shutil.copyfileobj(f, self.wfile)

    def do_HEAD(self):
        self.do_GET()

    def not_allowed(self):
        self.send_text(405, "Method Not Allowed")

    do_POST = do_PUT = do_DELETE = do_PATCH = not_allowed


class Server(http.server.ThreadingHTTPServer):
    """One thread per connection, at most max_connections of them and at
    most max_per_address from one client address (the others get a 503 and
    are closed at once); with ssl_context set, the TLS handshake happens in
    that thread, so a stalled client cannot block the others, and it must
    end within the request deadline (the handshake's timeout is for all of
    it, not for each read)."""
    daemon_threads = True
    ssl_context = None
    request_queue_size = BACKLOG
    max_connections = MAX_CONNECTIONS
    max_per_address = MAX_PER_ADDRESS

    def __init__(self, *args, **kwargs):
        self.lock = threading.Lock()
        self.open_from = {}  # client address -> connections being served
        super().__init__(*args, **kwargs)

    def take_slot(self, host):
        """Counts a connection from host in, or returns why it cannot be."""
        with self.lock:
            if sum(self.open_from.values()) >= self.max_connections:
                return "too many connections"
            if self.open_from.get(host, 0) >= self.max_per_address:
                return "too many connections from your address"
            self.open_from[host] = self.open_from.get(host, 0) + 1
            return None

    def give_slot(self, host):
        with self.lock:
            self.open_from[host] -= 1
            if not self.open_from[host]:
                del self.open_from[host]

    def process_request(self, request, client_address):
        why = self.take_slot(client_address[0])
        if why:
            self.refuse(request, why)
            return
        try:
            super().process_request(request, client_address)
        except Exception:
            self.give_slot(client_address[0])  # e.g. no thread could be started
            self.shutdown_request(request)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.give_slot(client_address[0])

    def refuse(self, request, why):
        """A short 503 (plain HTTP; best effort, never waits on the client), then close."""
        try:
            request.settimeout(0)
            if self.ssl_context is None:
                request.send(plain_response(503, "Service Unavailable", why, "Retry-After: 1\r\n"))
        except OSError:
            pass
        self.shutdown_request(request)

    def finish_request(self, request, client_address):
        if self.ssl_context is not None:
            try:
                request.settimeout(self.RequestHandlerClass.request_deadline)  # for the whole handshake
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
    ap.add_argument("--idle-timeout", type=float, default=IDLE_TIMEOUT, metavar="S",
                    help="close a connection silent this long (default %g s)" % IDLE_TIMEOUT)
    ap.add_argument("--request-deadline", type=float, default=REQUEST_DEADLINE, metavar="S",
                    help="a request's line and headers must arrive within S s of its first byte, else 408 "
                         "(default %g s)" % REQUEST_DEADLINE)
    ap.add_argument("--max-connections", type=int, default=MAX_CONNECTIONS, metavar="N",
                    help="connections served at once; more get a 503 (default %d)" % MAX_CONNECTIONS)
    ap.add_argument("--max-per-address", type=int, default=MAX_PER_ADDRESS, metavar="N",
                    help="connections served at once from one client address (default %d)" % MAX_PER_ADDRESS)
    args = ap.parse_args(argv)
    if not (args.idle_timeout > 0 and args.request_deadline > 0 and args.max_connections > 0
            and args.max_per_address > 0):
        ap.error("--idle-timeout, --request-deadline, --max-connections and --max-per-address must be positive")
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
    Handler.timeout = args.idle_timeout
    Handler.request_deadline = args.request_deadline
    Server.max_connections = args.max_connections
    Server.max_per_address = args.max_per_address
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
    print("  limits: idle %g s, request head %g s, %d connections, %d per address"
          % (args.idle_timeout, args.request_deadline, args.max_connections, args.max_per_address))
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
