"""Tests for tools/turn.py.  Nothing here leaves 127.0.0.1.

Cloudflare mode runs against a mock API (http.server in a thread); local mode
starts the real coturn (skipped when `turnserver` is not installed) and does
a STUN Binding and a long-term-credential TURN Allocate against it with the
small STUN client below.
"""
import hashlib
import hmac
import http.server
import importlib.util
import json
import os
import secrets
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import zlib

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "turn.py")
_spec = importlib.util.spec_from_file_location("rlx_tools_turn", TOOL)  # tools/ is no package
turn = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(turn)

# ---------------------------------------------------------------------------
# A minimal STUN/TURN client (RFC 5389 / RFC 5766), enough for Binding and Allocate.

MAGIC = 0x2112A442
BINDING, ALLOCATE = 0x0001, 0x0003
SUCCESS, ERROR = 0x0100, 0x0110  # class bits added to the method
A_USERNAME, A_MESSAGE_INTEGRITY, A_ERROR_CODE = 0x0006, 0x0008, 0x0009
A_REALM, A_NONCE, A_XOR_RELAYED, A_REQUESTED_TRANSPORT = 0x0014, 0x0015, 0x0016, 0x0019
A_XOR_MAPPED, A_FINGERPRINT = 0x0020, 0x8028


def attr(atype, value):
    pad = (-len(value)) % 4
    return struct.pack("!HH", atype, len(value)) + value + b"\0" * pad


def message(mtype, attrs=b"", tid=None, key=None):
    """A STUN message; with key, MESSAGE-INTEGRITY (HMAC-SHA1) comes last."""
    tid = tid or secrets.token_bytes(12)
    if key is not None:
        # The length in the header covers the MESSAGE-INTEGRITY attribute (24 bytes) when hashing.
        head = struct.pack("!HHI", mtype, len(attrs) + 24, MAGIC) + tid
        mac = hmac.new(key, head + attrs, hashlib.sha1).digest()
        attrs += attr(A_MESSAGE_INTEGRITY, mac)
    return struct.pack("!HHI", mtype, len(attrs), MAGIC) + tid + attrs, tid


def parse(data):
    """(type, tid, {attr type: value}, [(type, offset of the attribute)])."""
    mtype, length, cookie = struct.unpack("!HHI", data[:8])
    assert cookie == MAGIC, "not a STUN message"
    assert 20 + length == len(data), "bad STUN length"
    attrs, order, i = {}, [], 20
    while i < len(data):
        atype, alen = struct.unpack("!HH", data[i:i + 4])
        attrs[atype] = data[i + 4:i + 4 + alen]
        order.append((atype, i))
        i += 4 + alen + (-alen) % 4
    return mtype, data[8:20], attrs, order


def error_code(attrs):
    v = attrs[A_ERROR_CODE]
    return (v[2] & 7) * 100 + v[3], v[4:].decode("utf-8", "replace")


def xor_address(value, tid):
    family, xport = struct.unpack("!xBH", value[:4])
    port = xport ^ (MAGIC >> 16)
    if family == 1:
        addr = struct.unpack("!I", value[4:8])[0] ^ MAGIC
        return socket.inet_ntoa(struct.pack("!I", addr)), port
    mask = struct.pack("!I", MAGIC) + tid
    return socket.inet_ntop(socket.AF_INET6, bytes(a ^ b for a, b in zip(value[4:20], mask))), port


def integrity_ok(data, order, key):
    """Checks a response's MESSAGE-INTEGRITY against key."""
    offset = dict(order)[A_MESSAGE_INTEGRITY]
    head = bytearray(data[:offset])
    struct.pack_into("!H", head, 2, offset - 20 + 24)
    return hmac.compare_digest(hmac.new(key, bytes(head), hashlib.sha1).digest(), data[offset + 4:offset + 24])


def fingerprint_ok(data, order):
    offset = dict(order)[A_FINGERPRINT]
    want = (zlib.crc32(data[:offset]) ^ 0x5354554E) & 0xFFFFFFFF
    return struct.unpack("!I", data[offset + 4:offset + 8])[0] == want


def transact(sock, addr, msg, tid, timeout=2.0):
    """Sends msg, returns the parsed response with the same transaction id (retransmits twice)."""
    deadline = time.monotonic() + timeout
    for _ in range(3):
        sock.sendto(msg, addr)
        sock.settimeout(max(0.05, min(0.5, deadline - time.monotonic())))
        try:
            while True:
                data, _ = sock.recvfrom(4096)
                parsed = parse(data)
                if parsed[1] == tid:
                    return data, parsed
        except socket.timeout:
            continue
    raise AssertionError("no STUN response from %s:%d" % addr)


def long_term_key(user, realm, password):
    return hashlib.md5(("%s:%s:%s" % (user, realm, password)).encode()).digest()


UDP = attr(A_REQUESTED_TRANSPORT, bytes([17, 0, 0, 0]))


def allocate(addr, user, password):
    """Allocate with long-term credentials from a fresh socket: (final response, realm, raw bytes, key)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        msg, tid = message(ALLOCATE, UDP)
        _, (mtype, _, attrs, _) = transact(sock, addr, msg, tid)
        assert mtype == ALLOCATE | ERROR, hex(mtype)
        assert error_code(attrs)[0] == 401, error_code(attrs)
        assert A_REALM in attrs and A_NONCE in attrs, "401 without REALM and NONCE"
        realm, nonce = attrs[A_REALM], attrs[A_NONCE]
        key = long_term_key(user, realm.decode(), password)
        body = UDP + attr(A_USERNAME, user.encode()) + attr(A_REALM, realm) + attr(A_NONCE, nonce)
        msg, tid = message(ALLOCATE, body, key=key)
        data, parsed = transact(sock, addr, msg, tid)
        return parsed, realm.decode(), data, key


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:  # coturn listens on TCP as well
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return free_udp_port()
    return port


def children(pid):
    """PIDs whose parent is pid (from /proc)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(name))
    return out


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def clean_env(**extra):
    """The environment for a child turn.py: no proxies (urllib would send 127.0.0.1 there), no keys."""
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
           and k not in ("TURN_KEY_ID", "TURN_KEY_API_TOKEN")}
    env["NO_PROXY"] = "*"
    env.update(extra)
    return env


def run_tool(args, env, timeout=20):
    return subprocess.run([sys.executable, TOOL] + args, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


# ---------------------------------------------------------------------------


class Fragment(unittest.TestCase):
    def test_format(self):
        self.assertEqual(turn.fragment([("turn:127.0.0.1:3478?transport=udp", "u", "p")]),
                         "&turn=turn:127.0.0.1:3478?transport=udp|u|p")
        self.assertEqual(turn.fragment([("turn:a:1?transport=udp", "x", "y"),
                                        ("turns:a:5349?transport=tcp", "x", "y")]),
                         "&turn=turn:a:1?transport=udp|x|y;turns:a:5349?transport=tcp|x|y")

    def test_only_what_must_be_encoded(self):
        self.assertEqual(turn.fragment([("turn:[::1]:3478?transport=udp", "a+b", "c/d=e&f#g%")]),
                         "&turn=turn:[::1]:3478?transport=udp|a%2Bb|c/d=e%26f%23g%25")
        with self.assertRaises(ValueError):
            turn.fragment([("turn:a:1", "x|y", "z")])

    def test_binding_request(self):
        req, tid = turn.binding_request()
        self.assertEqual(len(req), 20)
        self.assertEqual(req[:8], bytes.fromhex("000100002112a442"))
        self.assertEqual(req[8:], tid)
        self.assertNotEqual(turn.binding_request()[1], tid)
        ok = struct.pack("!HHI", 0x0101, 0, MAGIC) + tid
        self.assertTrue(turn.is_binding_success(ok, tid))
        self.assertFalse(turn.is_binding_success(ok, b"\0" * 12))
        self.assertFalse(turn.is_binding_success(struct.pack("!HHI", 0x0111, 0, MAGIC) + tid, tid))

    def test_loopback_only_config(self):
        with tempfile.TemporaryDirectory() as d:
            lo = turn.coturn_config("127.0.0.1", 3478, 49152, 49252, "u", "p", "r", d)
            lan = turn.coturn_config("192.168.1.5", 3478, 49152, 49252, "u", "p", "r", d)
        self.assertIn("\nallow-loopback-peers\n", lo)
        self.assertNotIn("allow-loopback-peers\n", lan)
        for line in ("lt-cred-mech", "user=u:p", "no-cli", "no-tls", "no-dtls", "fingerprint", "log-file=stdout",
                     "no-multicast-peers", "listening-ip=192.168.1.5", "relay-ip=192.168.1.5"):
            self.assertIn("\n" + line + "\n", lan)


# ---------------------------------------------------------------------------
# Cloudflare mode against a mock API.

GENERATE_ICE_SERVERS = {"iceServers": [
    {"urls": ["stun:stun.cloudflare.com:3478", "stun:stun.cloudflare.com:53"]},
    {"urls": ["turn:turn.cloudflare.com:3478?transport=udp", "turn:turn.cloudflare.com:53?transport=udp",
              "turn:turn.cloudflare.com:3478?transport=tcp", "turns:turn.cloudflare.com:5349?transport=tcp"],
     "username": "cfuser0123", "credential": "cfcred4567"},
]}
GENERATE_OLD = {"iceServers": {
    "urls": ["stun:stun.cloudflare.com:3478", "turn:turn.cloudflare.com:3478?transport=udp",
             "turns:turn.cloudflare.com:5349?transport=tcp"],
    "username": "olduser", "credential": "oldcred"}}


class MockAPI(http.server.BaseHTTPRequestHandler):
    status = 201
    reply = GENERATE_ICE_SERVERS
    requests = []

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
        out = json.dumps(type(self).reply).encode()
        self.send_response(type(self).status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


class Cloudflare(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), MockAPI)
        cls.thread = threading.Thread(target=cls.httpd.serve_forever, daemon=True)
        cls.thread.start()
        cls.base = "http://127.0.0.1:%d/v1" % cls.httpd.server_address[1]

    @classmethod
    def tearDownClass(cls):
        cls.httpd.shutdown()
        cls.httpd.server_close()

    def setUp(self):
        MockAPI.requests = []
        MockAPI.status, MockAPI.reply = 201, GENERATE_ICE_SERVERS

    def cf(self, *args, **env):
        keys = {"TURN_KEY_ID": "key42abc", "TURN_KEY_API_TOKEN": "tok-secret-9"}
        keys.update(env)
        keys = {k: v for k, v in keys.items() if v is not None}
        return run_tool(["--cloudflare", "--api-base", self.base] + list(args), clean_env(**keys))

    def test_generate_ice_servers(self):
        r = self.cf("--ttl", "3600")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(MockAPI.requests), 1)
        req = MockAPI.requests[0]
        self.assertEqual(req["path"], "/v1/turn/keys/key42abc/credentials/generate-ice-servers")
        self.assertEqual(req["headers"]["Authorization"], "Bearer tok-secret-9")
        self.assertEqual(req["headers"]["Content-Type"], "application/json")
        self.assertEqual(json.loads(req["body"]), {"ttl": 3600})
        lines = r.stdout.splitlines()
        self.assertEqual(len([l for l in lines if l.startswith("&turn=")]), 1)
        self.assertEqual(lines[0], "&turn=" + ";".join(
            "%s|cfuser0123|cfcred4567" % u for u in GENERATE_ICE_SERVERS["iceServers"][1]["urls"]))
        self.assertNotIn("stun:", lines[0])
        self.assertIn("expire", lines[1])
        self.assertIn("UTC", lines[1])
        self.assertIn("bearer secret", lines[1])

    def test_old_generate_shape(self):
        MockAPI.reply = GENERATE_OLD
        r = self.cf("--ttl", "60")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines()[0],
                         "&turn=turn:turn.cloudflare.com:3478?transport=udp|olduser|oldcred;"
                         "turns:turn.cloudflare.com:5349?transport=tcp|olduser|oldcred")
        self.assertEqual(json.loads(MockAPI.requests[0]["body"]), {"ttl": 60})

    def test_missing_env(self):
        for name in ("TURN_KEY_ID", "TURN_KEY_API_TOKEN"):
            r = self.cf("--ttl", "60", **{name: None})
            self.assertEqual(r.returncode, 2)
            self.assertIn(name, r.stderr)
            self.assertEqual(r.stdout, "")
        self.assertEqual(MockAPI.requests, [])

    def test_bad_ttl(self):
        for bad in ("0", "-5", "abc", "200000", "1.5"):
            r = self.cf("--ttl=" + bad)
            self.assertEqual(r.returncode, 2, bad)
            self.assertIn("--ttl must be", r.stderr)
            self.assertIn("172800", r.stderr)
        self.assertEqual(MockAPI.requests, [])
        self.assertEqual(self.cf("--ttl", "172800").returncode, 0)

    def test_http_error(self):
        MockAPI.status = 401
        MockAPI.reply = {"success": False, "errors": [{"code": 10000, "message": "Authentication error"}]}
        r = self.cf("--ttl", "60")
        self.assertEqual(r.returncode, 1)
        self.assertIn("401", r.stderr)
        self.assertIn("Authentication error", r.stderr)
        self.assertNotIn("&turn=", r.stdout)
        MockAPI.reply = {"message": "key not found"}
        MockAPI.status = 404
        r = self.cf("--ttl", "60")
        self.assertEqual(r.returncode, 1)
        self.assertIn("404", r.stderr)
        self.assertIn("key not found", r.stderr)


# ---------------------------------------------------------------------------
# Local mode.


class Usage(unittest.TestCase):
    def test_help(self):
        r = run_tool(["--help"], clean_env())
        self.assertEqual(r.returncode, 0)
        for word in ("--cloudflare", "coturn", "&turn=", "--api-base", "--listen"):
            self.assertIn(word, r.stdout)

    def test_bad_flags(self):
        env = clean_env()
        for args in (["--listen", "0.0.0.0"], ["--listen", "localhost"], ["--user", "a|b"], ["--password", "x;y"],
                     ["--min-port", "50000", "--max-port", "49999"], ["--ttl", "60"], ["--port", "70000"]):
            r = run_tool(args, env)
            self.assertEqual(r.returncode, 2, args)

    def test_no_turnserver(self):
        with tempfile.TemporaryDirectory() as empty:
            r = run_tool(["--listen", "127.0.0.1"], clean_env(PATH=empty))
        self.assertEqual(r.returncode, 2)
        self.assertIn("coturn", r.stderr)


class FakeTurnserver(unittest.TestCase):
    """A `turnserver` script on PATH stands in for coturn misbehaving."""

    def fake(self, script):
        d = tempfile.mkdtemp(prefix="fake-turnserver-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", d]))
        path = os.path.join(d, "turnserver")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + script)
        os.chmod(path, stat.S_IRWXU)
        tmp = os.path.join(d, "tmp")
        os.mkdir(tmp)
        return d, clean_env(PATH=d + os.pathsep + os.environ.get("PATH", ""), TMPDIR=tmp), tmp

    def test_early_exit(self):
        _, env, tmp = self.fake("echo starting; echo 'fatal: cannot bind' >&2; exit 3\n")
        r = run_tool(["--listen", "127.0.0.1", "--port", str(free_udp_port())], env)
        self.assertEqual(r.returncode, 1)
        self.assertIn("fatal: cannot bind", r.stderr)
        self.assertIn("status 3", r.stderr)
        self.assertNotIn("&turn=", r.stdout)
        self.assertEqual(os.listdir(tmp), [])

    def test_port_in_use(self):
        _, env, tmp = self.fake("echo should not start; exit 9\n")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as busy:
            busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)  # as coturn binds
            busy.bind(("127.0.0.1", 0))
            r = run_tool(["--listen", "127.0.0.1", "--port", str(busy.getsockname()[1])], env)
        self.assertEqual(r.returncode, 1)
        self.assertIn("another TURN server", r.stderr)
        self.assertNotIn("should not start", r.stderr)
        self.assertEqual(os.listdir(tmp), [])

    def test_never_ready(self):
        # The fake server never exits on its own: the tool returning at all shows it gave up at
        # its --timeout (run_tool's own limit, far above 0.5 s, fails the test otherwise).
        d, env, tmp = self.fake('echo $$ > "%s"; echo silent; exec sleep 3600\n' % os.path.join("$(dirname $0)", "pid"))
        r = run_tool(["--listen", "127.0.0.1", "--port", str(free_udp_port()), "--timeout", "0.5"], env, timeout=120)
        self.assertEqual(r.returncode, 1)
        self.assertIn("did not answer", r.stderr)
        self.assertIn("silent", r.stderr)
        with open(os.path.join(d, "pid")) as f:
            self.assertFalse(alive(int(f.read())))
        self.assertEqual(os.listdir(tmp), [])


@unittest.skipUnless(turn.shutil.which("turnserver"), "turnserver (Debian package coturn) is not installed")
class LocalCoturn(unittest.TestCase):
    def test_relay(self):
        started = time.monotonic()
        port = free_udp_port()
        lo = 50000 + secrets.randbelow(10000)
        tmp = tempfile.mkdtemp(prefix="turn-test-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", tmp]))
        helper = subprocess.Popen(
            [sys.executable, TOOL, "--listen", "127.0.0.1", "--port", str(port), "--min-port", str(lo),
             "--max-port", str(lo + 40), "--user", "u", "--password", "p"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
            env=clean_env(TMPDIR=tmp))

        def finish():
            if helper.poll() is None:
                helper.kill()
                helper.wait()
            for pid in coturn:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
            helper.stdout.close()
            helper.stderr.close()
        coturn = []
        self.addCleanup(finish)

        lines = []
        timer = threading.Timer(15, helper.kill)
        timer.start()
        try:
            for line in helper.stdout:
                lines.append(line.rstrip("\n"))
                if line.startswith("&turn="):
                    lines.append(helper.stdout.readline().rstrip("\n"))
                    break
        finally:
            timer.cancel()
        if not (lines and lines[0].startswith("&turn=")):
            self.fail("no &turn= line: %r %s" % (lines, helper.stderr.read() if helper.poll() is not None else ""))
        self.assertEqual(lines[0], "&turn=turn:127.0.0.1:%d?transport=udp|u|p" % port)
        self.assertIn("ready", lines[1])
        ready_s = time.monotonic() - started
        coturn[:] = children(helper.pid)
        self.assertEqual(len(coturn), 1)
        self.assertEqual(len(os.listdir(tmp)), 1)  # the helper's temporary folder
        addr = ("127.0.0.1", port)

        # STUN Binding.
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.bind(("127.0.0.1", 0))
            msg, tid = message(BINDING)
            data, (mtype, _, attrs, order) = transact(sock, addr, msg, tid)
            self.assertEqual(mtype, BINDING | SUCCESS)
            self.assertEqual(xor_address(attrs[A_XOR_MAPPED], tid), sock.getsockname())
            self.assertTrue(fingerprint_ok(data, order))

        # TURN Allocate with the right password: 401 with REALM and NONCE, then success.
        (mtype, tid, attrs, order), realm, data, key = allocate(addr, "u", "p")
        self.assertEqual(mtype, ALLOCATE | SUCCESS, error_code(attrs) if A_ERROR_CODE in attrs else "")
        self.assertTrue(integrity_ok(data, order, key))
        host, relay_port = xor_address(attrs[A_XOR_RELAYED], tid)
        self.assertEqual(host, "127.0.0.1")
        self.assertTrue(lo <= relay_port <= lo + 40, relay_port)
        self.assertEqual(realm, "rlx.local")

        # A wrong password: 401.
        (mtype, tid, attrs, order), _, _, _ = allocate(addr, "u", "wrong")
        self.assertEqual(mtype, ALLOCATE | ERROR)
        self.assertEqual(error_code(attrs)[0], 401)

        # SIGTERM: coturn stopped, the temporary folder removed, a clean exit.
        helper.send_signal(signal.SIGTERM)
        self.assertEqual(helper.wait(timeout=10), 0, helper.stderr.read())
        self.assertFalse(alive(coturn[0]), "coturn still running")
        self.assertEqual(os.listdir(tmp), [])
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            self.assertFalse(turn.stun_ping(sock, addr, 0.2), "something still answers on the port")
        sys.stderr.write("[coturn ready after %.2f s, whole test %.2f s] " % (ready_s, time.monotonic() - started))


if __name__ == "__main__":
    unittest.main()
