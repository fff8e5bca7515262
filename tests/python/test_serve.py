"""Tests for tools/serve.py's defences, with real sockets on 127.0.0.1.

A directory redirect never leaves the server (GET /%2fsub must not answer
"Location: //sub/", which a browser reads as the host "sub"); a silent
connection is closed after the idle timeout; the connections served at once
are bounded (one more gets a 503 and is closed, and the server still answers
once the others are gone); the accept backlog is not the default 5.  The
server runs in a thread with a 1 s idle timeout and 4 connection slots, so
the whole file takes a few seconds.
"""
import http.server
import importlib.util
import os
import shutil
import socket
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


def request(port, raw_path, timeout=5):
    """One raw GET (no client-side normalization): (status, headers dict, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
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


class ServeDefences(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="rlx-serve-py-")
        os.makedirs(os.path.join(cls.root, "sub"))
        with open(os.path.join(cls.root, "index.html"), "w") as f:
            f.write("root")
        with open(os.path.join(cls.root, "sub", "index.html"), "w") as f:
            f.write("sub")

        class Handler(serve.Handler):
            root = cls.root
            quiet = True
            timeout = IDLE

        class Server(serve.Server):
            max_connections = SLOTS

        cls.httpd = Server(("127.0.0.1", 0), Handler)
        cls.port = cls.httpd.server_address[1]
        cls.thread = threading.Thread(target=cls.httpd.serve_forever, daemon=True)
        cls.thread.start()

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


if __name__ == "__main__":
    unittest.main()
