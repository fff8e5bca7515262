#!/usr/bin/env python3
"""turn.py - TURN credentials for the RLX tab cluster (standard library only).

The cluster page reads its TURN servers from the URL: `&turn=url|user|cred`,
several joined by `;`.  This helper prints that fragment, one way or the other:

Local mode (no flags): writes a coturn config (long-term credentials, one
user, UDP only, no TLS, no CLI) into a temporary folder, starts `turnserver`
(Debian package coturn) as a child, waits until it answers a STUN Binding
request, prints

  &turn=turn:IP:PORT?transport=udp|USER|PASSWORD

and a line saying it is ready, then stays in the foreground until Ctrl-C or
SIGTERM, when it stops coturn and removes the temporary folder.

Cloudflare mode (--cloudflare): asks Cloudflare's TURN service for
credentials that expire after --ttl seconds, using TURN_KEY_ID and
TURN_KEY_API_TOKEN from the environment, prints the same kind of fragment
(one entry per turn:/turns: URL) and when it expires, and exits.

  python3 tools/turn.py [--listen IP] [--port N] [--min-port N] [--max-port N]
                        [--user NAME] [--password PASS] [--realm R] [--dir DIR]
                        [--timeout S] [--verbose]
  python3 tools/turn.py --cloudflare [--ttl SECONDS] [--api-base URL]

Exit status: 0 on a clean stop or after printing Cloudflare credentials;
1 when coturn fails (its last output lines are shown) or the Cloudflare API
refuses; 2 for a usage error, a missing turnserver or a missing variable.
"""
import argparse
import collections
import datetime
import ipaddress
import json
import os
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request


def _load_serve():
    """tools/serve.py as a module (tools/ is no package; serve.py does nothing at import)."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "serve.py")
    spec = importlib.util.spec_from_file_location("rlx_tools_serve", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


lan_address = _load_serve().lan_address  # the LAN address logic of tools/serve.py

CLOUDFLARE_API = "https://rtc.live.cloudflare.com/v1"
MAX_TTL = 172800  # Cloudflare refuses longer-lived credentials (48 h)
DEFAULT_TTL = 86400

STUN_MAGIC = 0x2112A442
STUN_BINDING_REQUEST = 0x0001
STUN_BINDING_SUCCESS = 0x0101

# Characters the page splits on, or that would end the URL parameter early.
FORBIDDEN = set("|;&#% \t\r\n")


class Stop(Exception):
    """Raised from the signal handler to leave the foreground wait."""


def die(code, message):
    sys.stderr.write("turn.py: %s\n" % message)
    sys.stderr.flush()
    sys.exit(code)


# ---------------------------------------------------------------------------
# The fragment the page parses: &turn=url|user|cred;url|user|cred


def fragment(entries):
    """'&turn=' + 'url|user|cred' joined by ';'.

    Only what a URL query value cannot hold as is gets percent-encoded; the
    page's own separators ('|', ';') must not occur inside a field, so a field
    holding one is an error rather than something to escape."""
    parts = []
    for fields in entries:
        for f in fields:
            if "|" in f or ";" in f:
                raise ValueError("%r contains '|' or ';', which the page's turn= parameter uses as separators" % f)
        parts.append("|".join(urllib.parse.quote(f, safe="!$'()*,/:;=?@|[]~") for f in fields))
    return "&turn=" + ";".join(parts)


# ---------------------------------------------------------------------------
# STUN Binding (RFC 5389), just enough to see that coturn answers.


def binding_request():
    """(request bytes, transaction id): a 20-byte Binding request, no attributes."""
    tid = secrets.token_bytes(12)
    return struct.pack("!HHI", STUN_BINDING_REQUEST, 0, STUN_MAGIC) + tid, tid


def is_binding_success(data, tid):
    if len(data) < 20:
        return False
    mtype, length, cookie = struct.unpack("!HHI", data[:8])
    return mtype == STUN_BINDING_SUCCESS and cookie == STUN_MAGIC and data[8:20] == tid and 20 + length <= len(data)


def stun_ping(sock, addr, wait):
    """True when addr answers one Binding request within `wait` seconds."""
    req, tid = binding_request()
    try:
        sock.sendto(req, addr)
    except OSError:
        time.sleep(wait)
        return False
    deadline = time.monotonic() + wait
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        sock.settimeout(left)
        try:
            data, _ = sock.recvfrom(2048)
        except (socket.timeout, OSError):
            return False
        if is_binding_success(data, tid):
            return True


# ---------------------------------------------------------------------------
# Local mode: coturn as a child process.


def coturn_config(listen, port, min_port, max_port, user, password, realm, workdir):
    ip = ipaddress.ip_address(listen)
    lines = [
        "# written by tools/turn.py; removed when it stops",
        "listening-ip=%s" % listen,
        "relay-ip=%s" % listen,
        "listening-port=%d" % port,
        "min-port=%d" % min_port,
        "max-port=%d" % max_port,
        "realm=%s" % realm,
        "lt-cred-mech",
        "user=%s:%s" % (user, password),
        "fingerprint",
        "no-tls",
        "no-dtls",
        # Without no-cli (or a cli-password) coturn refuses to start.
        "no-cli",
        "no-multicast-peers",
        "userdb=%s" % os.path.join(workdir, "turndb"),
        "pidfile=%s" % os.path.join(workdir, "turnserver.pid"),
        "log-file=stdout",
        "simple-log",
    ]
    if ip.is_loopback:
        lines += [
            "# Relaying on a loopback address: the peers (the other browsers on this",
            "# machine) are loopback addresses too, and coturn answers CreatePermission",
            "# for them with 403 Forbidden IP unless they are allowed.  Never on a LAN",
            "# address: there it would let clients reach this machine's local services.",
            "allow-loopback-peers",
        ]
    return "\n".join(lines) + "\n"


def die_with_pdeath():
    """In the child: get SIGTERM if turn.py itself dies without cleaning up (Linux)."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def stop_child(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_local(args, ap):
    turnserver = shutil.which("turnserver")
    if not turnserver:
        die(2, "turnserver not found on PATH: install coturn (Debian/Ubuntu: sudo apt-get install coturn)")

    listen = args.listen
    if listen is None:
        listen = lan_address()
        if listen is None:
            listen = "127.0.0.1"
            sys.stderr.write("turn.py: no LAN address found; listening on 127.0.0.1 (this machine only)\n")
    ip = ipaddress.ip_address(listen)
    host = "[%s]" % listen if ip.version == 6 else listen
    password = args.password if args.password is not None else secrets.token_hex(16)

    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    # coturn binds with SO_REUSEPORT: a second one on a busy port starts "fine" and the kernel
    # splits the clients between the two.  Our own bind (without it) sees the port taken.
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((listen, args.port))
    except OSError as e:
        die(1, "cannot use UDP %s:%d: %s (another TURN server running there?)"
            % (host, args.port, e.strerror or e))

    if args.dir:
        workdir = os.path.abspath(args.dir)
        os.makedirs(workdir, exist_ok=True)
        remove_dir = False
    else:
        workdir = tempfile.mkdtemp(prefix="rlx-turn-")
        remove_dir = True
    proc = None
    tail = collections.deque(maxlen=20)
    try:
        conf = os.path.join(workdir, "turnserver.conf")
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds the password
        with os.fdopen(fd, "w") as f:
            f.write(coturn_config(listen, args.port, args.min_port, args.max_port, args.user, password,
                                  args.realm, workdir))
        if args.verbose:
            sys.stderr.write("turn.py: config %s\n" % conf)

        stopping = []

        def on_signal(signum, frame):
            if not stopping:
                stopping.append(signum)
                raise Stop(signum)

        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, on_signal)

        # Its own session: a Ctrl-C in the terminal reaches only us, and we stop it in order.
        proc = subprocess.Popen([turnserver, "-c", conf], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_pdeath)

        def pump():
            for raw in proc.stdout:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                tail.append(line)
                if args.verbose:
                    sys.stderr.write("coturn: %s\n" % line)
            proc.stdout.close()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()

        def coturn_output():
            reader.join(timeout=1)
            return "\n".join("  " + line for line in tail) or "  (no output)"

        ready = False
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            deadline = time.monotonic() + args.timeout
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    die(1, "coturn exited with status %d before it was ready; its last output:\n%s"
                        % (proc.returncode, coturn_output()))
                if stun_ping(sock, (listen, args.port), 0.1):
                    ready = True
                    break
        if not ready:
            stop_child(proc)
            die(1, "coturn did not answer a STUN Binding request on %s:%d within %g s; its last output:\n%s"
                % (host, args.port, args.timeout, coturn_output()))

        url = "turn:%s:%d?transport=udp" % (host, args.port)
        print(fragment([(url, args.user, password)]))
        print("coturn is ready on %s:%d (UDP, relay ports %d-%d): append the line above to the cluster "
              "page's URL; Ctrl-C or SIGTERM stops it." % (host, args.port, args.min_port, args.max_port))
        sys.stdout.flush()

        rc = proc.wait()
        die(1, "coturn exited with status %d; its last output:\n%s" % (rc, coturn_output()))
    except (Stop, KeyboardInterrupt):
        pass
    finally:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)  # a second Ctrl-C must not interrupt the cleanup
        if proc is not None:
            stop_child(proc)
        if remove_dir:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


# ---------------------------------------------------------------------------
# Cloudflare mode.


def parse_ttl(text):
    try:
        ttl = int(text, 10)
    except ValueError:
        ttl = None
    if ttl is None or not 1 <= ttl <= MAX_TTL:
        raise argparse.ArgumentTypeError(
            "--ttl must be a whole number of seconds from 1 to %d (48 h), got %r" % (MAX_TTL, text))
    return ttl


def error_message(body):
    """The human part of an API error body (JSON or text)."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:500] or "(empty body)"
    if isinstance(data, dict):
        for key in ("message", "error"):
            if isinstance(data.get(key), str):
                return data[key]
        errors = data.get("errors")
        if isinstance(errors, list) and errors:
            msgs = [e.get("message") if isinstance(e, dict) else str(e) for e in errors]
            return "; ".join(m for m in msgs if m) or text[:500]
    return text[:500]


def ice_entries(data):
    """[(url, username, credential)] for every turn:/turns: URL in a response.

    generate-ice-servers answers {"iceServers": [{"urls": [...], "username", "credential"}, ...]}
    (a STUN-only entry first); the older /generate answers {"iceServers": {"urls": [...], ...}}."""
    servers = data.get("iceServers") if isinstance(data, dict) else None
    if isinstance(servers, dict):
        servers = [servers]
    if not isinstance(servers, list):
        raise ValueError("no iceServers in the response")
    entries = []
    for server in servers:
        if not isinstance(server, dict):
            continue
        urls = server.get("urls", server.get("url", []))
        if isinstance(urls, str):
            urls = [urls]
        for url in urls:
            if isinstance(url, str) and url.lower().startswith(("turn:", "turns:")):
                user, cred = server.get("username"), server.get("credential")
                if not isinstance(user, str) or not isinstance(cred, str):
                    raise ValueError("%s comes without a username and credential" % url)
                entries.append((url, user, cred))
    if not entries:
        raise ValueError("no turn: URLs in the response")
    return entries


def run_cloudflare(args):
    env = {}
    for name in ("TURN_KEY_ID", "TURN_KEY_API_TOKEN"):
        value = os.environ.get(name, "").strip()
        if not value:
            die(2, "--cloudflare needs %s in the environment (the TURN key's id and API token "
                   "from the Cloudflare dashboard, Realtime > TURN)" % name)
        env[name] = value
    ttl = args.ttl if args.ttl is not None else DEFAULT_TTL
    url = "%s/turn/keys/%s/credentials/generate-ice-servers" % (
        args.api_base.rstrip("/"), urllib.parse.quote(env["TURN_KEY_ID"], safe=""))
    req = urllib.request.Request(url, data=json.dumps({"ttl": ttl}).encode(), method="POST", headers={
        "Authorization": "Bearer " + env["TURN_KEY_API_TOKEN"],
        "Content-Type": "application/json",
        "Accept": "application/json",
    })
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            body = resp.read()
    except urllib.error.HTTPError as e:
        die(1, "Cloudflare answered HTTP %d %s: %s" % (e.code, e.reason, error_message(e.read())))
    except (urllib.error.URLError, OSError) as e:
        die(1, "cannot reach %s: %s" % (args.api_base, getattr(e, "reason", e)))
    try:
        entries = ice_entries(json.loads(body.decode("utf-8")))
        line = fragment(entries)
    except ValueError as e:
        die(1, "unexpected answer from Cloudflare (%s): %s" % (e, body[:300].decode("utf-8", "replace")))
    expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=ttl)
    print(line)
    print("these credentials expire at %s UTC (in %s); until then the link is a bearer secret: "
          "anyone who has it can relay traffic on your Cloudflare account."
          % (expires.strftime("%Y-%m-%d %H:%M:%S"), human_duration(ttl)))
    sys.stdout.flush()
    return 0


def human_duration(seconds):
    if seconds % 3600 == 0:
        return "%d h" % (seconds // 3600)
    if seconds % 60 == 0:
        return "%d min" % (seconds // 60)
    return "%d s" % seconds


# ---------------------------------------------------------------------------


def port_number(text):
    try:
        n = int(text, 10)
    except ValueError:
        n = -1
    if not 1 <= n <= 65535:
        raise argparse.ArgumentTypeError("a port is a number from 1 to 65535, got %r" % text)
    return n


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Print the &turn= URL fragment for the RLX tab cluster page. "
                    "Without --cloudflare: run a local coturn (turnserver) until Ctrl-C/SIGTERM and print "
                    "its credentials once it answers. With --cloudflare: fetch expiring credentials from "
                    "Cloudflare's TURN service (TURN_KEY_ID and TURN_KEY_API_TOKEN from the environment), "
                    "print them and exit.",
        epilog="output: the first line is &turn=URL|USER|CRED[;URL|USER|CRED...], the fragment to append "
               "to the cluster page's URL; a human line follows.")
    local = ap.add_argument_group("local coturn (default mode)")
    local.add_argument("--listen", metavar="IP", help="address coturn listens and relays on "
                       "(default: this machine's LAN address, as tools/serve.py finds it)")
    local.add_argument("--port", type=port_number, default=3478, help="listening port, UDP (default 3478)")
    local.add_argument("--min-port", type=port_number, default=49152, help="lowest relay port (default 49152)")
    local.add_argument("--max-port", type=port_number, default=49252, help="highest relay port (default 49252)")
    local.add_argument("--user", default="rlx", help="TURN user name (default rlx)")
    local.add_argument("--password", help="TURN password (default: a random one)")
    local.add_argument("--realm", default="rlx.local", help="TURN realm (default rlx.local)")
    local.add_argument("--dir", help="write the coturn config and user db into DIR and keep them "
                       "(default: a temporary folder, removed on exit)")
    local.add_argument("--timeout", type=float, default=10.0,
                       help="seconds to wait for coturn to answer STUN (default 10)")
    local.add_argument("--verbose", action="store_true", help="copy coturn's log to stderr")
    cloud = ap.add_argument_group("Cloudflare TURN")
    cloud.add_argument("--cloudflare", action="store_true",
                       help="get credentials from Cloudflare instead of running coturn")
    cloud.add_argument("--ttl", type=parse_ttl, default=None,
                       help="credential lifetime in seconds, 1 to %d (default %d = 24 h)" % (MAX_TTL, DEFAULT_TTL))
    cloud.add_argument("--api-base", default=CLOUDFLARE_API,
                       help="API root (default %s); for tests against a mock or a compatible "
                            "self-hosted service" % CLOUDFLARE_API)
    args = ap.parse_args(argv)

    if args.cloudflare:
        return run_cloudflare(args)
    if args.ttl is not None:
        ap.error("--ttl only applies with --cloudflare")
    if args.listen is not None:
        try:
            ip = ipaddress.ip_address(args.listen)
        except ValueError:
            ap.error("--listen must be an IP address, got %r" % args.listen)
        if ip.is_unspecified:
            ap.error("--listen needs one address the browsers can reach (not %s): it goes into the TURN URL"
                     % args.listen)
    if args.min_port > args.max_port:
        ap.error("--min-port must not be above --max-port")
    if args.timeout <= 0:
        ap.error("--timeout must be positive")
    for name, value in (("--user", args.user), ("--password", args.password)):
        if value is not None and (value == "" or FORBIDDEN & set(value) or (name == "--user" and ":" in value)):
            ap.error("%s must be non-empty without spaces or any of | ; & # %%%s"
                     % (name, " :" if name == "--user" else ""))
    if args.password is not None and args.password.lower().startswith("0x"):
        ap.error("--password must not start with 0x (coturn would read it as a hex key)")
    if not args.realm or FORBIDDEN & set(args.realm):
        ap.error("--realm must be non-empty without spaces or any of | ; & # %")
    return run_local(args, ap)


if __name__ == "__main__":
    sys.exit(main())
