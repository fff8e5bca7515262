"""Tests for tools/serve.py's defences, with real sockets on 127.0.0.1.

A directory redirect never leaves the server (GET /%2fsub must not answer
"Location: //sub/", which a browser reads as the host "sub"); a silent
connection is closed after the idle timeout; the connections served at once
are bounded (one more gets a 503 and is closed, and the server still answers
once the others are gone); the accept backlog is not the default 5.  The
server runs in a thread with a 1 s idle timeout and 4 connection slots, so
the whole file takes a few seconds.

Slow-header (slowloris) clients: a connection that drips a header line
faster than the idle timeout is answered 408 and closed at the request
deadline, so drippers holding every slot free them and a fresh request is
served; one client address is held to its own share of the slots (the
extra connections get a 503) while another address is still served.  Other
client addresses are other loopback addresses (127.0.0.2, ...).  A TLS
handshake dripped byte by byte is cut at the request deadline too.  Every
wait is an event with a generous bound, never a measured time.
"""
import http.server
import contextlib
import importlib.util
import io
import os
import shutil
import socket
import ssl
import tempfile
import threading
import time
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "serve.py")
_spec = importlib.util.spec_from_file_location("rlx_tools_serve", TOOL)  # tools/ is no package
serve = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(serve)

IDLE = 1.0
SLOTS = 4


def request(port, raw_path, timeout=5, source="127.0.0.1"):
    """One raw GET from address source (no client-side normalization): (status, headers dict, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0)) as s:
        s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % raw_path).encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    return status, headers, body


def closed_within(sock, seconds):
    """True when the server closes sock (recv gives b"" or a reset) within seconds."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def start_server(root, idle, deadline, slots, per_address):
    """serve.Server on 127.0.0.1:0 in a thread, serving root quietly with these limits."""
    class Handler(serve.Handler):
        quiet = True
        timeout = idle
        request_deadline = deadline

    class Server(serve.Server):
        max_connections = slots
        max_per_address = per_address

    Handler.root = root
    httpd = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def make_root():
    root = tempfile.mkdtemp(prefix="rlx-serve-py-")
    os.makedirs(os.path.join(root, "sub"))
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("root")
    with open(os.path.join(root, "sub", "index.html"), "w") as f:
        f.write("sub")
    return root


class ServeDefences(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = make_root()
        cls.httpd = start_server(cls.root, IDLE, 10, SLOTS, SLOTS)
        cls.port = cls.httpd.server_address[1]

    @classmethod
    def tearDownClass(cls):
        cls.httpd.shutdown()
        cls.httpd.server_close()
        shutil.rmtree(cls.root, ignore_errors=True)

    def test_redirects_stay_on_this_server(self):
        for raw in ["/%2fsub", "/%2Fsub", "//sub", "/%5csub", "/./sub", "/%2f%2fsub", "/sub"]:
            status, headers, _ = request(self.port, raw)
            self.assertEqual(status, 301, raw)
            loc = headers["location"]
            self.assertTrue(loc.startswith("/") and not loc.startswith("//"), "%s -> Location %s" % (raw, loc))
            self.assertEqual(loc, "/sub/", raw)
        status, _, body = request(self.port, "/sub/")
        self.assertEqual((status, body), (200, b"sub"))

    def test_idle_connection_is_closed(self):
        self.assertIsNotNone(serve.Handler.timeout, "no idle timeout: a stalled client holds a thread forever")
        self.assertLessEqual(serve.Handler.timeout, 30)
        with socket.create_connection(("127.0.0.1", self.port)) as s:
            s.sendall(b"GET / HTTP/1.1\r\n")  # a request that never ends
            t0 = time.monotonic()
            self.assertTrue(closed_within(s, IDLE + 3), "a stalled connection stayed open")
            self.assertLess(time.monotonic() - t0, IDLE + 3)

    def test_connections_are_bounded(self):
        held = [socket.create_connection(("127.0.0.1", self.port)) for _ in range(SLOTS)]
        try:
            time.sleep(0.2)  # the server has taken every slot
            with socket.create_connection(("127.0.0.1", self.port)) as extra:
                extra.settimeout(2)
                data = b""
                try:
                    while True:
                        chunk = extra.recv(1024)
                        if not chunk:
                            break
                        data += chunk
                except ConnectionResetError:
                    pass
                self.assertTrue(data.startswith(b"HTTP/1.1 503"), data[:40])
            self.assertLessEqual(threading.active_count(), SLOTS + 4)
        finally:
            for s in held:
                s.close()
        deadline = time.monotonic() + IDLE + 3
        while True:  # the slots come back once the held connections are gone
            status, _, body = request(self.port, "/")
            if status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual((status, body), (200, b"root"))

    def test_backlog(self):
        self.assertGreaterEqual(serve.Server.request_queue_size, 128)


class Dripper:
    """A slow-header client: from address source it sends a request line and
    the start of a header, then one more byte of that header every 0.2 s
    (well inside the idle timeout; one line, so no header-count limit ends it)."""

    def __init__(self, port, source="127.0.0.1", start=b"GET / HTTP/1.1\r\nHost: x\r\nX-Drip: ", byte=b"a"):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30, source_address=(source, 0))
        self.sock.sendall(start)
        self.byte, self.stop = byte, threading.Event()
        threading.Thread(target=self.drip, daemon=True).start()

    def drip(self):
        while not self.stop.wait(0.2):
            try:
                self.sock.sendall(self.byte)
            except OSError:
                return

    def answer(self, seconds):
        """What the server sent until it closed the connection, or None if it
        did not close it within seconds ("reset" when it reset it)."""
        data, end = b"", time.monotonic() + seconds
        try:
            while time.monotonic() < end:
                self.sock.settimeout(end - time.monotonic())
                chunk = self.sock.recv(1024)
                if not chunk:
                    return data
                data += chunk
        except ConnectionResetError:
            return data or "reset"  # unread drip bytes on the server's side make its close a reset
        except socket.timeout:
            pass
        return None

    def close(self):
        self.stop.set()
        self.sock.close()


class SlowHeaders(unittest.TestCase):
    WAIT = 30  # seconds: a bound on events that take about a second, never a measurement

    def setUp(self):
        self.root = make_root()
        self.addCleanup(shutil.rmtree, self.root, True)
        self.clients = []
        self.addCleanup(lambda: [c.close() for c in self.clients])

    def serve(self, tls=False, **limits):
        httpd = start_server(self.root, **limits)
        self.addCleanup(httpd.server_close)
        self.addCleanup(httpd.shutdown)
        if tls:
            with contextlib.redirect_stdout(io.StringIO()):
                cert, key = serve.ensure_certificate(None, os.path.join(self.root, "tls"))
            httpd.ssl_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            httpd.ssl_context.load_cert_chain(cert, key)
        return httpd.server_address[1]

    def test_drippers_holding_every_slot_are_cut_at_the_request_deadline(self):
        port = self.serve(idle=30, deadline=1, slots=4, per_address=4)
        self.clients = [Dripper(port) for _ in range(4)]
        for d in self.clients:
            got = d.answer(self.WAIT)
            self.assertIsNotNone(got, "a connection dripping headers outlived the 1 s request deadline")
            self.assertTrue(got == "reset" or got.startswith(b"HTTP/1.1 408 "), got)
        end = time.monotonic() + self.WAIT
        while True:  # the slots come back as the server's threads end
            status, _, body = request(port, "/", self.WAIT)
            if status == 200 or time.monotonic() > end:
                break
            time.sleep(0.1)
        self.assertEqual((status, body), (200, b"root"))

    @unittest.skipUnless(shutil.which("openssl"), "needs the openssl command")
    def test_a_dripped_tls_handshake_is_cut_at_the_request_deadline(self):
        port = self.serve(tls=True, idle=30, deadline=1, slots=4, per_address=4)
        # A handshake record of 512 bytes announced, then one byte of it every 0.2 s.
        self.clients = [Dripper(port, start=b"\x16\x03\x01\x02\x00", byte=b"\x01")]
        self.assertIsNotNone(self.clients[0].answer(20), "a dripped TLS handshake outlived the 1 s deadline")

    def test_one_address_cannot_take_every_slot(self):
        port = self.serve(idle=60, deadline=60, slots=6, per_address=3)
        self.clients = [Dripper(port, "127.0.0.2") for _ in range(3)]
        with socket.create_connection(("127.0.0.1", port), source_address=("127.0.0.2", 0)) as extra:
            extra.settimeout(self.WAIT)
            try:
                data = extra.recv(1024)
            except socket.timeout:
                data = b""
        self.assertTrue(data.startswith(b"HTTP/1.1 503 "), "a 4th connection from 127.0.0.2 was not refused")
        self.assertIn(b"from your address", data)
        status, _, body = request(port, "/", self.WAIT, "127.0.0.1")
        self.assertEqual((status, body), (200, b"root"))  # while 127.0.0.2 still drips
        self.assertTrue(all(d.answer(0.01) is None for d in self.clients), "the drippers were not held")


if __name__ == "__main__":
    unittest.main()
