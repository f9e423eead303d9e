"""A loopback testbed of real third-party servers: nginx, squid, dante, unbound and dnsdist.

Theory of operation
-------------------
``Testbed.start()`` makes a test CA and a leaf certificate with trustme, writes every config file into
one directory under /tmp (world-traversable, because squid runs as ``proxy`` and dnsdist and the nginx
worker as ``nobody``), refuses to start if any fixed port is already taken, launches each daemon and
waits (bounded) until each one answers a real request. Every daemon leaves a pid file in that directory,
so ``stop()`` needs nothing but the directory: it sends SIGTERM to every pid whose command line names
our directory (never a process we did not start), waits for all of them together, and escalates to
SIGKILL after a bounded wait. A process that is a zombie counts as gone: PID 1 on the CI machines reaps
orphans late, and ``kill -0`` would still report it alive. If start fails halfway, everything already
started is stopped before the error is raised.

Everything binds to 127.0.0.0/8 or ::1 and nothing resolves names off the machine: unbound refuses
everything outside ``.test``, squid reads names from our hosts file and asks only 127.0.0.1:53 (where
nothing listens), and dnsdist's security polling is off.

The blackhole (SYNs to port 19098 and all traffic to 127.0.0.99 silently dropped) is a private nft table
``inet fastnet_testbed``, deleted again on stop; without a usable ``nft`` it is simply not available.

Use it from pytest through the session fixture ``testbed`` (``tests/conftest.py`` imports it), or by hand:
``python tests/testbed.py start|stop|status`` (a shim that runs ``main`` below) keeps its state in
/tmp/fastnet-testbed. A fixture finds a healthy hand-started testbed and reuses it (without stopping it)
unless ``FASTNET_TESTBED_REUSE=0``.

Example::

    def test_whoami(testbed):
        with socket.create_connection(("127.0.0.2", testbed.http_port), timeout=5) as s:
            s.sendall(b"GET /whoami HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
            ...
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import pwd
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "DNS_RECORDS",
    "STATE_DIR",
    "Testbed",
    "TestbedError",
    "TestbedUnavailable",
    "main",
    "testbed",
]

#: Where ``python tests/testbed.py start`` keeps its state (configs, logs, pid files).
STATE_DIR = Path("/tmp/fastnet-testbed")

#: DNS data served by unbound (and through dnsdist/DoH), in the order it is answered.
DNS_RECORDS: list[tuple[str, int, str, str]] = [
    ("app.test", 5, "A", "127.0.0.1"),
    ("app.test", 5, "A", "127.0.0.2"),
    ("multi.test", 5, "A", "127.0.0.3"),
    ("multi.test", 5, "A", "127.0.0.1"),
    ("v6.test", 5, "AAAA", "::1"),
    ("dual.test", 5, "A", "127.0.0.1"),
    ("dual.test", 5, "AAAA", "::1"),
    ("failover.test", 5, "A", "127.0.0.4"),
    ("failover.test", 5, "A", "127.0.0.1"),
    ("blackhole.test", 5, "A", "127.0.0.99"),
    ("blackhole.test", 5, "A", "127.0.0.1"),
    ("doh.test", 5, "A", "127.0.0.1"),
    ("ttl1.test", 1, "A", "127.0.0.1"),
]

_SANS = [
    "localhost",
    "127.0.0.1",
    "127.0.0.2",
    "127.0.0.3",
    "::1",
    "app.test",
    "multi.test",
    "v6.test",
    "dual.test",
    "failover.test",
    "blackhole.test",
    "doh.test",
    "ttl1.test",
    "*.test",
]
# Note: OpenSSL (so Python's ssl and curl) never matches "*.test": a wildcard needs at least two labels
# after it. Every name a test connects to must therefore be listed on its own.

#: The executables the testbed needs, and the Debian package of each.
_BINARIES = {
    "nginx": "nginx",
    "squid": "squid",
    "danted": "dante-server",
    "unbound": "unbound",
    "dnsdist": "dnsdist",
    "openssl": "openssl",  # squid's password file
    "useradd": "passwd",  # dante's Unix account
    "chpasswd": "passwd",
}
_SQUID_AUTH_HELPER = "/usr/lib/squid/basic_ncsa_auth"

_NFT_TABLE = "fastnet_testbed"
_READY_TIMEOUT = 10.0
_STOP_TIMEOUT = 8.0


class TestbedError(RuntimeError):
    """The testbed could not start (busy port, daemon died, not ready in time)."""

    __test__ = False  # not a test class, even when imported into a test module


class TestbedUnavailable(TestbedError):
    """A prerequisite is missing on this machine (not root, a binary not installed)."""


def _env_flag(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() not in ("", "0", "false", "no", "off")


# --------------------------------------------------------------------------- process helpers


def _proc_state(pid: int) -> str | None:
    """The one-letter state of ``pid`` from /proc (``"Z"`` for a zombie), or None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # "pid (comm) S ...": comm may contain spaces and parentheses, so split after the last ")".
    return raw.rpartition(")")[2].split()[0]


def _alive(pid: int) -> bool:
    state = _proc_state(pid)
    return state is not None and state not in ("Z", "X")


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"  ({path} not readable)"
    return "\n".join("  | " + line for line in text.splitlines()[-lines:]) or f"  ({path} is empty)"


# --------------------------------------------------------------------------- probes


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _port_in_use(host: str, port: int, kind: int) -> bool:
    """True if something holds ``host:port`` (TCP listener or bound UDP socket)."""
    with socket.socket(_family(host), kind) as sock:
        if kind == socket.SOCK_STREAM:
            # Lets us bind past TIME_WAIT leftovers but still fails on a live listener. (Not for UDP,
            # where two SO_REUSEADDR sockets may share a port and the check would see nothing.)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def _http_get(host: str, port: int, request: bytes, timeout: float = 2.0) -> bytes:
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 65536:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
        return data


def _dns_query_wire(name: str, qtype: int = 1, qid: int = 0x4242) -> bytes:
    header = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    qname = b"".join(bytes([len(label)]) + label.encode() for label in name.rstrip(".").split(".")) + b"\0"
    return header + qname + struct.pack("!HH", qtype, 1)


def _dns_udp_ok(host: str, port: int, name: str = "app.test") -> bool:
    """Ask ``name`` A over UDP; True on a NOERROR answer with at least one record."""
    query = _dns_query_wire(name)
    with socket.socket(_family(host), socket.SOCK_DGRAM) as sock:
        sock.settimeout(0.5)
        sock.sendto(query, (host, port))
        reply, _ = sock.recvfrom(4096)
    qid, flags, _qd, ancount = struct.unpack("!HHHH", reply[:8])
    return bool(qid == 0x4242 and flags & 0x000F == 0 and ancount > 0)


# --------------------------------------------------------------------------- the testbed


class Testbed:
    """Real servers on loopback, with fixed addresses that tests are written against.

    Example::

        tb = Testbed()          # fresh directory under /tmp
        tb.start()
        try:
            print(tb.url("/whoami", host="::1", tls=True))   # https://[::1]:19443/whoami
        finally:
            tb.stop()
    """

    __test__ = False  # not a test class, even when imported into a test module

    origin_hosts = ["127.0.0.1", "127.0.0.2", "127.0.0.3", "::1"]
    http_port = 19080
    https_port = 19443
    squid = ("127.0.0.1", 19128)
    squid_open = ("127.0.0.1", 19129)
    squid_user = "fastnet"
    squid_password = "s3cret"
    socks5 = ("127.0.0.1", 19180)
    socks5_auth = ("127.0.0.1", 19181)
    socks_user = "fastnetsocks"
    socks_password = "s3cret"
    unbound = ("127.0.0.1", 19054)
    dnsdist = ("127.0.0.1", 19055)
    doh_port = 19853
    doh_url = "https://127.0.0.1:19853/dns-query"
    refused = ("127.0.0.1", 19099)
    blackhole_host = "127.0.0.99"
    blackhole_port = 19098
    dns_records = DNS_RECORDS
    #: Whether start() installs the nft blackhole (one machine-wide table; a second testbed must not).
    use_blackhole = True

    def __init__(self, root: Path | str | None = None) -> None:
        if root is None:
            root = tempfile.mkdtemp(prefix="fastnet-testbed-", dir="/tmp")
        self.root = Path(root)
        self.pki = self.root / "pki"
        self.ca_path = str(self.pki / "ca.pem")
        self.cert_path = str(self.pki / "server.pem")
        self.key_path = str(self.pki / "server.key")
        self.hosts_path = str(self.root / "hosts")
        self.www = self.root / "nginx" / "www"
        self.blackhole_available = False
        self._ca: Any = None
        self._children: list[subprocess.Popen[bytes]] = []

    # ----------------------------------------------------------------- public helpers

    @property
    def ca(self) -> Any:
        """The ``trustme.CA`` that signed every server certificate (reloaded from disk if needed)."""
        if self._ca is None:
            import trustme

            self._ca = trustme.CA.from_pem(
                (self.pki / "ca.pem").read_bytes(), (self.pki / "ca.key").read_bytes()
            )
        return self._ca

    def url(self, path: str = "/", host: str = "127.0.0.1", tls: bool = False) -> str:
        """``http(s)://host:port/path`` for nginx; IPv6 literals are bracketed."""
        scheme, port = ("https", self.https_port) if tls else ("http", self.http_port)
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        if not path.startswith("/"):
            path = "/" + path
        return f"{scheme}://{host}:{port}{path}"

    def ssl_context(self) -> ssl.SSLContext:
        """A client context that trusts only the testbed CA."""
        return ssl.create_default_context(cafile=self.ca_path)

    def env(self) -> dict[str, str]:
        """The addresses as ``FASTNET_TB_*`` strings (written to ``testbed.env`` by the CLI)."""

        def hostport(addr: tuple[str, int]) -> str:
            return f"{addr[0]}:{addr[1]}"

        return {
            "FASTNET_TB_ROOT": str(self.root),
            "FASTNET_TB_CA": self.ca_path,
            "FASTNET_TB_HTTP": self.url("/"),
            "FASTNET_TB_HTTPS": self.url("/", tls=True),
            "FASTNET_TB_SQUID": f"http://{self.squid_user}:{self.squid_password}@{hostport(self.squid)}",
            "FASTNET_TB_SQUID_OPEN": f"http://{hostport(self.squid_open)}",
            "FASTNET_TB_SOCKS5": f"socks5://{hostport(self.socks5)}",
            "FASTNET_TB_SOCKS5_AUTH": (
                f"socks5://{self.socks_user}:{self.socks_password}@{hostport(self.socks5_auth)}"
            ),
            "FASTNET_TB_DNS": hostport(self.unbound),
            "FASTNET_TB_DOH": self.doh_url,
            "FASTNET_TB_REFUSED": hostport(self.refused),
            "FASTNET_TB_BLACKHOLE": f"{self.blackhole_host}:{self.blackhole_port}"
            if self.blackhole_available
            else "",
        }

    # ----------------------------------------------------------------- prerequisites

    @staticmethod
    def missing_prerequisites() -> list[str]:
        """Why this machine cannot run the testbed (empty when it can)."""
        problems = []
        if os.geteuid() != 0:
            problems.append("not running as root")
        for binary, package in _BINARIES.items():
            if _which(binary) is None:
                problems.append(f"{binary} not found (Debian package {package})")
        if not os.path.exists(_SQUID_AUTH_HELPER):
            problems.append(f"{_SQUID_AUTH_HELPER} not found (Debian package squid)")
        try:
            import trustme  # noqa: F401
        except ImportError:
            problems.append("the trustme package is not installed")
        return problems

    # ----------------------------------------------------------------- layout

    def _pidfiles(self) -> dict[str, Path]:
        r = self.root
        return {
            "nginx": r / "nginx" / "nginx.pid",
            "squid": r / "squid" / "squid.pid",
            "danted-open": r / "dante" / "danted-open.pid",
            "danted-auth": r / "dante" / "danted-auth.pid",
            "unbound": r / "unbound" / "unbound.pid",
            "dnsdist": r / "dnsdist" / "dnsdist.pid",
        }

    def _ports(self) -> list[tuple[str, str, int, int]]:
        """(owner, host, port, socket type) for every address we bind or promise is free."""
        tcp, udp = int(socket.SOCK_STREAM), int(socket.SOCK_DGRAM)
        ports: list[tuple[str, str, int, int]] = []
        for host in self.origin_hosts:
            ports += [("nginx", host, self.http_port, tcp), ("nginx", host, self.https_port, tcp)]
        for host in ("127.0.0.1", "::1"):
            ports += [("squid", host, self.squid[1], tcp), ("squid", host, self.squid_open[1], tcp)]
            ports += [("dante", host, self.socks5[1], tcp), ("dante", host, self.socks5_auth[1], tcp)]
            ports += [("unbound", host, self.unbound[1], udp), ("unbound", host, self.unbound[1], tcp)]
            ports += [("dnsdist", host, self.doh_port, tcp)]
        ports += [("dnsdist", self.dnsdist[0], self.dnsdist[1], udp)]
        ports += [("dnsdist", self.dnsdist[0], self.dnsdist[1], tcp)]
        ports += [("refused", self.refused[0], self.refused[1], tcp)]
        ports += [("blackhole", "127.0.0.1", self.blackhole_port, tcp)]
        return ports

    # ----------------------------------------------------------------- start

    def start(self) -> None:
        """Write configs, start every component and wait until each answers (a few seconds at most)."""
        problems = self.missing_prerequisites()
        if problems:
            raise TestbedUnavailable("testbed unavailable: " + "; ".join(problems))
        running = [name for name, pid in self._live_pids().items() if pid]
        if running:
            raise TestbedError(f"testbed in {self.root} is already running ({', '.join(running)})")
        busy = [
            f"{owner} {host}:{port}/{'tcp' if kind == socket.SOCK_STREAM else 'udp'}"
            for owner, host, port, kind in self._ports()
            if _port_in_use(host, port, kind)
        ]
        if busy:
            raise TestbedError(
                "testbed ports already in use, refusing to share them: "
                + ", ".join(busy)
                + f" (a hand-started testbed? `python tests/testbed.py stop` stops the one in {STATE_DIR})"
            )
        try:
            self._prepare()
            self._launch_all()
            self._wait_all()
            self._blackhole_on()
        except BaseException:
            self.stop()
            raise
        (self.root / "state.json").write_text(json.dumps({"blackhole": self.blackhole_available}))

    def _prepare(self) -> None:
        import trustme

        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)
        for sub in ("pki", "nginx/www", "nginx/logs", "nginx/tmp", "squid", "dante", "unbound", "dnsdist"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
            os.chmod(self.root / sub, 0o755)
        # PKI: world-readable on purpose (a throwaway test key; nginx/dnsdist workers run as nobody).
        ca = trustme.CA(organization_name="fastnet test CA")
        leaf = ca.issue_cert(*_SANS)
        self._ca = ca
        ca.cert_pem.write_to_path(str(self.pki / "ca.pem"))
        ca.private_key_pem.write_to_path(str(self.pki / "ca.key"))
        leaf.private_key_pem.write_to_path(self.key_path)
        Path(self.cert_path).write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
        for path in self.pki.iterdir():
            os.chmod(path, 0o644)
        hosts = ["127.0.0.1 localhost", "::1 localhost"]
        hosts += [f"{value} {name}" for name, _ttl, _kind, value in DNS_RECORDS]
        Path(self.hosts_path).write_text("\n".join(hosts) + "\n")
        self._write_nginx()
        self._write_squid()
        self._write_dante()
        self._write_unbound()
        self._write_dnsdist()
        self._ensure_socks_user()

    def _write_nginx(self) -> None:
        d = self.root / "nginx"
        # A fixed seed keeps the body the same across runs; tests compare against the file anyway.
        (self.www / "1m.bin").write_bytes(_pseudo_random(1 << 20))
        (self.www / "index.html").write_text("hello from nginx")
        listens = []
        for host in self.origin_hosts:
            h = f"[{host}]" if ":" in host else host
            listens.append(f"        listen {h}:{self.http_port};")
            listens.append(f"        listen {h}:{self.https_port} ssl;")
        headers = "\n".join(
            f'            add_header X-Header-{i:02d} "value-{i:02d}-abcdefghijk";' for i in range(1, 41)
        )
        temp = "\n".join(
            f"    {kind}_temp_path {d}/tmp/{kind};"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        (d / "nginx.conf").write_text(f"""\
user nobody nogroup;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/logs/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log {d}/logs/access.log;
{temp}
    default_type application/octet-stream;
    types {{ text/html html; application/octet-stream bin; }}
    keepalive_requests 100000;
    keepalive_timeout 75s;
    server {{
{chr(10).join(listens)}
        ssl_certificate     {self.cert_path};
        ssl_certificate_key {self.key_path};
        root {self.www};
        location = /whoami {{
            default_type text/plain;
            return 200 "addr=$server_addr port=$server_port scheme=$scheme host=$host client=$remote_addr\\n";
        }}
        location = /redirect {{ return 302 /whoami; }}
        location = /status/404 {{ return 404; }}
        location = /2b {{ default_type text/plain; return 200 "ok"; }}
        location = /h40 {{
            default_type text/plain;
{headers}
            return 200 "ok";
        }}
    }}
}}
""")

    def _write_squid(self) -> None:
        d = self.root / "squid"
        digest = subprocess.run(
            ["openssl", "passwd", "-apr1", self.squid_password],
            check=True,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        (d / "passwd").write_text(f"{self.squid_user}:{digest}\n")
        auth_port, open_port = self.squid[1], self.squid_open[1]
        (d / "squid.conf").write_text(f"""\
http_port 127.0.0.1:{auth_port} name=authport
http_port [::1]:{auth_port} name=authport6
http_port 127.0.0.1:{open_port} name=openport
http_port [::1]:{open_port} name=openport6
visible_hostname fastnet-squid
pid_filename {d}/squid.pid
cache_log {d}/cache.log
access_log stdio:{d}/access.log
cache deny all
cache_mem 8 MB
coredump_dir {d}
shutdown_lifetime 0 seconds
pinger_enable off
icp_port 0
htcp_port 0
hosts_file {self.hosts_path}
dns_nameservers 127.0.0.1
dns_timeout 2 seconds
connect_timeout 5 seconds
auth_param basic program {_SQUID_AUTH_HELPER} {d}/passwd
auth_param basic realm fastnet-squid
auth_param basic children 2 startup=1
acl open_port myportname openport openport6
acl authed proxy_auth REQUIRED
http_access allow open_port
http_access allow authed
http_access deny all
""")
        for path in [d, *d.iterdir()]:
            shutil.chown(path, "proxy", "proxy")

    def _write_dante(self) -> None:
        d = self.root / "dante"
        instances = (("open", self.socks5[1], "none"), ("auth", self.socks5_auth[1], "username"))
        for name, port, method in instances:
            (d / f"danted-{name}.conf").write_text(f"""\
logoutput: {d}/danted-{name}.log
internal: 127.0.0.1 port = {port}
internal: ::1 port = {port}
external: lo
clientmethod: none
socksmethod: {method}
user.privileged: root
user.unprivileged: nobody
client pass {{ from: 127.0.0.0/8 to: 0/0 }}
client pass {{ from: ::1/128 to: 0/0 }}
socks pass {{ from: 0/0 to: 0/0 command: connect }}
""")

    def _write_unbound(self) -> None:
        d = self.root / "unbound"
        data = "\n".join(
            f'    local-data: "{name}. {ttl} IN {kind} {value}"' for name, ttl, kind, value in DNS_RECORDS
        )
        port = self.unbound[1]
        (d / "unbound.conf").write_text(f"""\
server:
    interface: 127.0.0.1@{port}
    interface: ::1@{port}
    port: {port}
    do-daemonize: yes
    pidfile: "{d}/unbound.pid"
    username: ""
    chroot: ""
    directory: "{d}"
    logfile: "{d}/unbound.log"
    use-syslog: no
    verbosity: 1
    log-queries: yes
    num-threads: 1
    so-reuseport: no
    access-control: 127.0.0.0/8 allow
    access-control: ::1/128 allow
    module-config: "iterator"
    rrset-roundrobin: no
    local-zone: "." refuse
    local-zone: "test." static
{data}
remote-control:
    control-enable: no
""")

    def _write_dnsdist(self) -> None:
        d = self.root / "dnsdist"
        (d / "dnsdist.conf").write_text(f"""\
setSecurityPollSuffix("")
setLocal("127.0.0.1:{self.dnsdist[1]}")
setACL({{"127.0.0.0/8", "::1/128"}})
newServer({{address="127.0.0.1:{self.unbound[1]}", name="unbound", checkName="app.test.", checkInterval=5}})
addDOHLocal("127.0.0.1:{self.doh_port}", "{self.cert_path}", "{self.key_path}", "/dns-query")
addDOHLocal("[::1]:{self.doh_port}", "{self.cert_path}", "{self.key_path}", "/dns-query")
""")

    def _ensure_socks_user(self) -> None:
        try:
            pwd.getpwnam(self.socks_user)
        except KeyError:
            subprocess.run(
                ["useradd", "-M", "-N", "-d", "/nonexistent", "-s", "/usr/sbin/nologin", self.socks_user],
                check=True,
                capture_output=True,
                timeout=15,
            )
        subprocess.run(
            ["chpasswd"],
            input=f"{self.socks_user}:{self.socks_password}\n".encode(),
            check=True,
            capture_output=True,
            timeout=15,
        )

    def _launch(self, name: str, cmd: list[str], log: Path) -> None:
        """Run a daemonizing launcher; it returns once the daemon has forked away."""
        with open(log, "ab") as out:
            result = subprocess.run(
                cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, timeout=30
            )
        if result.returncode != 0:
            raise TestbedError(f"{name} failed to start (exit {result.returncode}):\n{_tail(log)}")

    def _launch_all(self) -> None:
        r = self.root
        self._launch(
            "nginx",
            ["nginx", "-p", f"{r}/nginx", "-c", f"{r}/nginx/nginx.conf", "-e", f"{r}/nginx/logs/error.log"],
            r / "nginx" / "launch.log",
        )
        self._launch("squid", ["squid", "-f", f"{r}/squid/squid.conf"], r / "squid" / "launch.log")
        for name in ("open", "auth"):
            self._launch(
                f"danted-{name}",
                ["danted", "-D", "-f", f"{r}/dante/danted-{name}.conf", "-p", f"{r}/dante/danted-{name}.pid"],
                r / "dante" / f"launch-{name}.log",
            )
        self._launch("unbound", ["unbound", "-c", f"{r}/unbound/unbound.conf"], r / "unbound" / "launch.log")
        # dnsdist 1.7 has no daemon mode: run it in its own session and write its pid file ourselves.
        with open(r / "dnsdist" / "dnsdist.log", "ab") as out:
            proc = subprocess.Popen(
                [
                    "dnsdist",
                    "-C",
                    f"{r}/dnsdist/dnsdist.conf",
                    "--supervised",
                    "--disable-syslog",
                    "-u",
                    "nobody",
                    "-g",
                    "nogroup",
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._children.append(proc)
        (r / "dnsdist" / "dnsdist.pid").write_text(f"{proc.pid}\n")

    def _wait_all(self) -> None:
        r = self.root
        plain = b"GET /2b HTTP/1.1\r\nHost: testbed\r\nConnection: close\r\n\r\n"
        proxied = b"GET http://127.0.0.1:%d/2b HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        proxied %= self.http_port

        def nginx_ready() -> bool:
            for host in self.origin_hosts:
                if not _http_get(host, self.http_port, plain).startswith(b"HTTP/1.1 200"):
                    return False
                socket.create_connection((host, self.https_port), timeout=1).close()
            return True

        def squid_ready() -> bool:
            auth = _http_get(*self.squid, proxied).startswith(b"HTTP/1.1 407")
            return auth and _http_get(*self.squid_open, proxied).startswith(b"HTTP/1.1 200")

        def socks_ready(addr: tuple[str, int], method: bytes) -> Callable[[], bool]:
            def probe() -> bool:
                with socket.create_connection(addr, timeout=1) as sock:
                    sock.sendall(b"\x05\x01\x00")
                    return sock.recv(2) == b"\x05" + method

            return probe

        def unbound_ready() -> bool:
            return _dns_udp_ok("127.0.0.1", self.unbound[1]) and _dns_udp_ok("::1", self.unbound[1])

        def dnsdist_ready() -> bool:
            if not _dns_udp_ok(*self.dnsdist):
                return False
            b64 = base64.urlsafe_b64encode(_dns_query_wire("app.test")).rstrip(b"=").decode()
            for host in ("127.0.0.1", "::1"):
                conn = http.client.HTTPSConnection(host, self.doh_port, timeout=2, context=self.ssl_context())
                try:
                    accept = {"Accept": "application/dns-message"}
                    conn.request("GET", f"/dns-query?dns={b64}", headers=accept)
                    resp = conn.getresponse()
                    resp.read()
                    if resp.status != 200:
                        return False
                finally:
                    conn.close()
            return True

        checks: list[tuple[str, Callable[[], bool], Path]] = [
            ("nginx", nginx_ready, r / "nginx" / "logs" / "error.log"),
            ("squid", squid_ready, r / "squid" / "cache.log"),
            ("danted-open", socks_ready(self.socks5, b"\x00"), r / "dante" / "danted-open.log"),
            ("danted-auth", socks_ready(self.socks5_auth, b"\xff"), r / "dante" / "danted-auth.log"),
            ("unbound", unbound_ready, r / "unbound" / "unbound.log"),
            ("dnsdist", dnsdist_ready, r / "dnsdist" / "dnsdist.log"),
        ]
        deadline = time.monotonic() + _READY_TIMEOUT
        for name, probe, log in checks:
            last: BaseException | None = None
            while True:
                try:
                    if probe():
                        break
                except (OSError, ValueError, http.client.HTTPException) as exc:
                    last = exc
                pid = _read_pid(self._pidfiles()[name])
                if name == "dnsdist" and self._children and self._children[-1].poll() is not None:
                    raise TestbedError(f"dnsdist exited with {self._children[-1].returncode}:\n{_tail(log)}")
                if time.monotonic() > deadline:
                    raise TestbedError(
                        f"{name} not ready after {_READY_TIMEOUT:.0f} s (pid {pid}, last error {last!r}):\n"
                        + _tail(log)
                    )
                time.sleep(0.02)

    def _blackhole_on(self) -> None:
        self.blackhole_available = False
        if not self.use_blackhole or _which("nft") is None:
            return
        subprocess.run(["nft", "delete", "table", "inet", _NFT_TABLE], capture_output=True, timeout=10)
        rules = f"""\
table inet {_NFT_TABLE} {{
    chain input {{
        type filter hook input priority 0; policy accept;
        iif "lo" tcp dport {self.blackhole_port} drop
        iif "lo" ip daddr {self.blackhole_host} drop
    }}
}}
"""
        result = subprocess.run(["nft", "-f", "-"], input=rules.encode(), capture_output=True, timeout=10)
        if result.returncode == 0:
            self.blackhole_available = True
            (self.root / "nft.applied").write_text(_NFT_TABLE + "\n")

    # ----------------------------------------------------------------- stop / status

    def _live_pids(self) -> dict[str, int | None]:
        """Pid of each component if it is alive and is ours (its command line names our directory)."""
        pids: dict[str, int | None] = {}
        for name, path in self._pidfiles().items():
            pid = _read_pid(path)
            pids[name] = pid if pid and _alive(pid) and str(self.root) in _cmdline(pid) else None
        return pids

    def stop(self) -> None:
        """Stop every component by pid (TERM, then KILL after a bounded wait) and drop the nft table."""
        pids = {name: pid for name, pid in self._live_pids().items() if pid}
        for pid in pids.values():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + _STOP_TIMEOUT
        for sig_round in (signal.SIGTERM, signal.SIGKILL):
            while time.monotonic() < deadline:
                for child in self._children:
                    child.poll()  # reap our own child so it does not linger as a zombie
                if not any(_alive(pid) for pid in pids.values()):
                    break
                time.sleep(0.02)
            left = [pid for pid in pids.values() if _alive(pid)]
            if not left or sig_round == signal.SIGKILL:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 3.0
        for child in self._children:
            try:
                child.wait(timeout=3)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait(timeout=3)
        self._children.clear()
        marker = self.root / "nft.applied"
        if marker.exists():
            subprocess.run(["nft", "delete", "table", "inet", _NFT_TABLE], capture_output=True, timeout=10)
            marker.unlink()
        self.blackhole_available = False
        still = [f"{name} (pid {pid})" for name, pid in pids.items() if _alive(pid)]
        if still:
            raise TestbedError("testbed components did not exit: " + ", ".join(still))

    def status(self) -> dict[str, int | None]:
        """Map of component name to its live pid (None when it is not running)."""
        return self._live_pids()

    def is_running(self) -> bool:
        """True when every component is alive."""
        return all(self._live_pids().values())

    @classmethod
    def attach(cls, root: Path | str = STATE_DIR) -> Testbed | None:
        """The testbed running in ``root`` (started by hand), or None when it is not fully running."""
        bed = cls(root)
        if not (bed.root / "state.json").exists() or not bed.is_running():
            return None
        bed.blackhole_available = bool(json.loads((bed.root / "state.json").read_text()).get("blackhole"))
        bed.blackhole_available = bed.blackhole_available and (bed.root / "nft.applied").exists()
        return bed


def _which(binary: str) -> str | None:
    # Debian puts daemons in /usr/sbin, which is not always on PATH for non-login shells.
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return shutil.which(binary, path=path)


def _pseudo_random(size: int) -> bytes:
    import random

    return random.Random(0xFA57).randbytes(size)


# --------------------------------------------------------------------------- pytest fixture

try:
    import pytest
except ImportError:  # pragma: no cover - the CLI works without pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture(scope="session")
    def testbed() -> Iterator[Testbed]:
        """The running testbed; a skip where it cannot run (a failure with FASTNET_TESTBED_REQUIRED=1)."""
        required = _env_flag("FASTNET_TESTBED_REQUIRED")
        if _env_flag("FASTNET_TESTBED_REUSE", default=True):
            existing = Testbed.attach(STATE_DIR)
            if existing is not None:
                yield existing
                return
        problems = Testbed.missing_prerequisites()
        if problems:
            reason = "testbed unavailable: " + "; ".join(problems)
            if required:
                pytest.fail(reason + " (FASTNET_TESTBED_REQUIRED=1)", pytrace=False)
            pytest.skip(reason)
        bed = Testbed()
        try:
            bed.start()
        except TestbedError as exc:
            if not any(bed.root.iterdir()):  # refused before writing anything: nothing worth keeping
                bed.root.rmdir()
            pytest.fail(f"testbed failed to start in {bed.root}: {exc}", pytrace=False)
        try:
            yield bed
        finally:
            bed.stop()
            if not _env_flag("FASTNET_TESTBED_KEEP"):
                shutil.rmtree(bed.root, ignore_errors=True)


# --------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    """``python tests/testbed.py start|stop|status`` with state in /tmp/fastnet-testbed."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in ("start", "stop", "status"):
        print("usage: python tests/testbed.py start|stop|status", file=sys.stderr)
        return 2
    bed = Testbed(STATE_DIR)
    command = args[0]
    if command == "start":
        if any(bed.status().values()):
            print(f"testbed already running in {STATE_DIR}; stop it first", file=sys.stderr)
            return 1
        shutil.rmtree(STATE_DIR, ignore_errors=True)
        began = time.monotonic()
        try:
            bed.start()
        except TestbedError as exc:
            print(f"testbed: {exc}", file=sys.stderr)
            return 1
        env = bed.env()
        (STATE_DIR / "testbed.env").write_text("".join(f"export {k}='{v}'\n" for k, v in env.items()))
        print(f"testbed started in {time.monotonic() - began:.2f} s; source {STATE_DIR}/testbed.env")
        for key, value in env.items():
            print(f"  {key}={value}")
        return 0
    if command == "stop":
        began = time.monotonic()
        try:
            bed.stop()
        except TestbedError as exc:
            print(f"testbed: {exc}", file=sys.stderr)
            return 1
        print(f"testbed stopped in {time.monotonic() - began:.2f} s")
        return 0
    status = bed.status()
    for name, pid in status.items():
        print(f"  {name:12} {f'running, pid {pid}' if pid else 'stopped'}")
    blackhole = (STATE_DIR / "nft.applied").exists()
    print(f"  {'blackhole':12} {'on' if blackhole else 'off'}")
    return 0 if all(status.values()) else 3


if __name__ == "__main__":
    sys.exit(main())
