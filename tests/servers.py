"""Real servers on loopback for tests: Mosquitto, an in-process amqtt broker, InfluxDB 1.x.

Why real servers: the behaviour siltwatch depends on (ACL refusals, QoS 1 acks,
persistence across restarts, InfluxQL results) is the server's, and a mock would
only repeat our own assumptions back to us. Every server binds 127.0.0.1 on a free
port so tests never collide with a system service or with each other.

Only the standard library is used for process control and HTTP, so this module
works before any siltwatch code exists.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ingest.mqtt.embedded_broker import (
    LOOPBACK as LOOPBACK,  # re-exported for the tests and benchmarks
)
from ingest.mqtt.embedded_broker import EmbeddedBroker, LoopbackServer, StartStop
from ingest.mqtt.embedded_broker import free_port as free_port  # re-exported for the tests

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0


class ThreadedHttpServer(StartStop):
    """``http.server`` on a free loopback port, served by a daemon thread; ``with`` starts
    and stops it. The stand-ins for HTTP services bring their own request handler."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer((LOOPBACK, 0), handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.server.server_address[1]}"


def port_open(host: str, port: int, timeout: float = 0.2) -> bool:
    """True when a TCP connection to host:port is accepted right now."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _tail(path: Path, lines: int = 20) -> str:
    """Last lines of a log file, or a note that it does not exist (for error messages)."""
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"<{path}: {exc.strerror}>"
    return "\n".join(text.splitlines()[-lines:])


def _terminate(proc: subprocess.Popen[bytes], timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM, wait, and SIGKILL only if the process ignores us (never leaves it running)."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)


def _mosquitto_account() -> pwd.struct_passwd | None:
    """The account Mosquitto drops to when started as root, or None when it will not drop.

    Mosquitto 2.x started as root switches to user ``mosquitto`` and only then opens the
    password file, ACL file, log file and persistence folder, so those must belong to it.
    """
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("mosquitto")
    except KeyError:
        return None


def _reachable_by(account: pwd.struct_passwd, path: Path) -> bool:
    """True when ``account`` can traverse every parent folder of ``path``.

    pytest's ``tmp_path`` lives under ``/tmp/pytest-of-root`` (mode 0700), which the
    ``mosquitto`` user cannot enter even if ``path`` itself is chowned to it.
    """
    for parent in path.resolve().parents:
        st = parent.stat()
        if st.st_uid == account.pw_uid:
            ok = bool(st.st_mode & 0o100)
        elif st.st_gid == account.pw_gid:
            ok = bool(st.st_mode & 0o010)
        else:
            ok = bool(st.st_mode & 0o001)
        if not ok:
            return False
    return True


def _chown_tree(path: Path, uid: int, gid: int) -> None:
    """``chown -R uid:gid path`` without a subprocess."""
    os.chown(path, uid, gid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)


def _openssl(*args: str, cwd: Path) -> None:
    """Run openssl and raise with its stderr when it fails (its messages are the useful part)."""
    result = subprocess.run(
        ["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {result.stderr.strip()}")


class _LoopbackProcess(LoopbackServer):
    """What Mosquitto and InfluxDB servers share: a binary found on disk, a loopback
    port, one child process with its log file, and ``with`` support (start on enter,
    ``close()`` on exit)."""

    BINARY = ""
    DEBIAN_PATH = ""
    _proc: subprocess.Popen[bytes] | None
    log_path: Path
    workdir: Path
    _own_workdir: bool

    def _take_workdir(self, workdir: Path | None, prefix: str) -> None:
        """Use ``workdir``, or a new temporary folder that ``close()`` removes."""
        self._own_workdir = workdir is None
        self.workdir = (
            Path(tempfile.mkdtemp(prefix=prefix)) if workdir is None else Path(workdir).resolve()
        )

    @classmethod
    def binary(cls) -> str | None:
        """Path of the executable (Debian puts some in /usr/sbin, often not on PATH)."""
        found = shutil.which(cls.BINARY)
        if found:
            return found
        return cls.DEBIAN_PATH if Path(cls.DEBIAN_PATH).exists() else None

    @classmethod
    def available(cls) -> bool:
        """True when the executable is installed."""
        return cls.binary() is not None

    def _installed(self) -> str:
        """The executable's path; raises when it is not installed."""
        binary = self.binary()
        if binary is None:
            raise RuntimeError(f"{self.BINARY} is not installed")
        return binary

    def _spawn(
        self, argv: list[str], output: Path, ready: Callable[[], bool], awaited: str
    ) -> None:
        """Run ``argv`` (its output appended to ``output``) and return once ``ready()``.

        Raises with :meth:`_logs` when the process exits first, or stops it and raises when
        it is not ready within START_TIMEOUT_S (``awaited``: what it did not do).
        """
        with output.open("ab") as out:
            self._proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=out,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C in pytest must not reach it first
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self._proc.poll() is not None:
                code = self._proc.returncode
                self._proc = None
                raise RuntimeError(f"{self.BINARY} exited with {code} at start:\n{self._logs()}")
            if ready():
                return
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"{self.BINARY} did not {awaited} within {START_TIMEOUT_S} s:\n{self._logs()}"
                )
            time.sleep(0.05)

    def _logs(self) -> str:
        """What to show when the server did not start: the tail of its log."""
        return _tail(self.log_path)

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self) -> None:
        """SIGTERM and wait for the exit (Mosquitto saves its persistence file, InfluxDB
        keeps its data in workdir: ``start()`` again sees it)."""
        if self._proc is not None:
            _terminate(self._proc)
            self._proc = None

    def restart(self) -> None:
        """Stop and start on the same port(s)."""
        self.stop()
        self.start()

    def log_text(self) -> str:
        """The server log so far (Mosquitto's: connections, refusals, ACL denials with
        log_type all)."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""


class MosquittoServer(_LoopbackProcess):
    """A Mosquitto broker process on loopback, configured from Python.

    The port is chosen once in ``__init__`` and reused by every ``start()``, so clients
    can reconnect to the same address after ``restart()`` or ``kill()`` + ``start()``
    (that is how persistence and reconnect behaviour are tested).
    """

    BINARY = "mosquitto"
    DEBIAN_PATH = "/usr/sbin/mosquitto"

    def __init__(
        self,
        workdir: Path,
        *,
        users: dict[str, str] | None = None,
        acl: str | None = None,
        port: int | None = None,
        persistence: bool = True,
        tls: bool = False,
        extra_config: tuple[str, ...] = (),
        log_types: tuple[str, ...] = ("all",),
    ) -> None:
        """``extra_config``: more mosquitto.conf lines (e.g. ``max_queued_messages 0``).

        ``log_types``: what the broker logs; ``all`` (the default, for tests that read
        ACL denials) writes two lines per message, which slows a load test down.
        """
        self.log_types = log_types
        self.workdir = Path(workdir).resolve()
        self.extra_config = extra_config
        self.users = dict(users or {})
        self.acl = acl
        self.persistence = persistence
        self.tls = tls
        self._port = port if port is not None else free_port()
        self._tls_port: int | None = free_port() if tls else None
        self.conf_path = self.workdir / "mosquitto.conf"
        self.log_path = self.workdir / "mosquitto.log"
        self.stderr_path = self.workdir / "mosquitto.stderr"
        self.data_dir = self.workdir / "data"
        self.ca_path: Path | None = None
        self.run_as = "root"
        self._proc: subprocess.Popen[bytes] | None = None
        self._configured = False

    # -- address ---------------------------------------------------------------------

    @property
    def tls_port(self) -> int:
        """Port of the TLS listener; only exists when constructed with ``tls=True``."""
        if self._tls_port is None:
            raise RuntimeError("this MosquittoServer was created without tls=True")
        return self._tls_port

    # -- configuration ---------------------------------------------------------------

    def _write_config(self) -> None:
        """Write config, password file, ACL file and (optionally) TLS material into workdir."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(exist_ok=True)
        lines = [
            f"listener {self._port} {LOOPBACK}",
            f"log_dest file {self.log_path}",
            *(f"log_type {t}" for t in self.log_types),
            "connection_messages true",
        ]
        if self.users:
            passwd = self.workdir / "passwd"
            passwd.unlink(missing_ok=True)
            for i, (user, password) in enumerate(self.users.items()):
                # -c creates the file for the first user; later users are appended.
                flags = ["-c", "-b"] if i == 0 else ["-b"]
                subprocess.run(
                    ["mosquitto_passwd", *flags, str(passwd), user, password],
                    check=True,
                    capture_output=True,
                )
            lines += ["allow_anonymous false", f"password_file {passwd}"]
        else:
            # Mosquitto 2.x refuses anonymous clients unless told otherwise.
            lines.append("allow_anonymous true")
        if self.acl is not None:
            acl_path = self.workdir / "acl"
            acl_path.write_text(self.acl.strip() + "\n")
            lines.append(f"acl_file {acl_path}")
        lines += list(self.extra_config)
        if self.persistence:
            lines += ["persistence true", f"persistence_location {self.data_dir}/"]
        else:
            lines.append("persistence false")
        if self.tls:
            self._make_certs()
            tls_dir = self.workdir / "tls"
            lines += [
                f"listener {self.tls_port} {LOOPBACK}",
                f"cafile {tls_dir / 'ca.crt'}",
                f"certfile {tls_dir / 'server.crt'}",
                f"keyfile {tls_dir / 'server.key'}",
            ]

        account = _mosquitto_account()
        chown_to = None
        if account is None:
            self.run_as = pwd.getpwuid(os.geteuid()).pw_name
        elif _reachable_by(account, self.workdir):
            chown_to = account
            self.run_as = account.pw_name
        else:
            # The mosquitto user could not even enter workdir (e.g. pytest's tmp_path);
            # stay root rather than fail with "Unable to open pwfile". Loopback test only.
            lines.append("user root")
            self.run_as = "root"
        self.conf_path.write_text("\n".join(lines) + "\n")
        if chown_to is not None:
            _chown_tree(self.workdir, chown_to.pw_uid, chown_to.pw_gid)
        self._configured = True

    def _make_certs(self) -> None:
        """A throwaway CA and a server certificate valid for 127.0.0.1 and localhost.

        EC keys keep generation fast. The SAN is what clients check (CN is ignored by
        modern TLS stacks); key identifiers keep Python's strict X.509 mode happy.
        """
        tls_dir = self.workdir / "tls"
        tls_dir.mkdir(exist_ok=True)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        _openssl(
            "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
            "-subj", "/CN=siltwatch test CA", cwd=tls_dir,
        )  # fmt: skip
        _openssl(
            "req", "-new", *ec, "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=localhost", cwd=tls_dir,
        )  # fmt: skip
        (tls_dir / "server.ext").write_text(
            "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
            "basicConstraints=critical,CA:FALSE\n"
            "keyUsage=critical,digitalSignature,keyEncipherment\n"
            "extendedKeyUsage=serverAuth\n"
            "subjectKeyIdentifier=hash\n"
            "authorityKeyIdentifier=keyid,issuer\n"
        )
        _openssl(
            "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.crt", "-days", "2",
            "-extfile", "server.ext", cwd=tls_dir,
        )  # fmt: skip
        self.ca_path = tls_dir / "ca.crt"

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Spawn mosquitto and return once every listener accepts TCP connections."""
        if self.running:
            return
        binary = self._installed()
        if not self._configured:
            self._write_config()
        ports = [self._port] + ([self._tls_port] if self._tls_port is not None else [])
        self._spawn(
            [binary, "-c", str(self.conf_path)],
            self.stderr_path,
            lambda: all(port_open(LOOPBACK, p) for p in ports),
            f"listen on {ports}",
        )

    def kill(self) -> None:
        """SIGKILL: a crash, so nothing is saved since the last autosave."""
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait(timeout=STOP_TIMEOUT_S)
            self._proc = None

    # -- logs ------------------------------------------------------------------------

    def _logs(self) -> str:
        return f"--- {self.log_path}\n{_tail(self.log_path)}\n--- stderr\n{_tail(self.stderr_path)}"


class AmqttServer(EmbeddedBroker):
    """The embedded amqtt broker (ingest/mqtt/embedded_broker.py) as a test server: MQTT 3.1.1, anonymous."""


class InfluxDBServer(_LoopbackProcess):
    """An InfluxDB 1.x ``influxd`` process on loopback with all its files in one folder.

    HTTP and the RPC (backup/restore) port both bind 127.0.0.1 on free ports, usage
    reporting and the ``_internal`` monitor database are off (no phoning home, no
    background writes). The 1.x HTTP API only: ``/ping``, ``/write``, ``/query``.
    """

    BINARY = "influxd"
    DEBIAN_PATH = "/usr/bin/influxd"

    def __init__(self, workdir: Path | None = None, *, port: int | None = None) -> None:
        self._take_workdir(workdir, "siltwatch-influxdb-")
        self._port = port if port is not None else free_port()
        self._rpc_port = free_port()
        self.conf_path = self.workdir / "influxdb.conf"
        self.log_path = self.workdir / "influxd.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self._port}"

    def _write_config(self) -> None:
        for sub in ("meta", "data", "wal"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        self.conf_path.write_text(
            f"""\
reporting-enabled = false
bind-address = "{LOOPBACK}:{self._rpc_port}"

[meta]
  dir = "{self.workdir / "meta"}"
  logging-enabled = false

[data]
  dir = "{self.workdir / "data"}"
  wal-dir = "{self.workdir / "wal"}"
  wal-fsync-delay = "0s"
  query-log-enabled = false

[monitor]
  store-enabled = false

[http]
  enabled = true
  bind-address = "{LOOPBACK}:{self._port}"
  auth-enabled = false
  log-enabled = false
"""
        )

    def start(self) -> None:
        """Spawn influxd and return once ``GET /ping`` answers 204."""
        if self.running:
            return
        binary = self._installed()
        self._write_config()
        self._spawn(
            [binary, "run", "-config", str(self.conf_path)],
            self.log_path,
            self._ping,
            "answer /ping",
        )

    def _ping(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/ping", timeout=0.5) as resp:
                return int(resp.status) == 204
        except (OSError, urllib.error.URLError):
            return False

    def close(self) -> None:
        """Stop, and remove workdir when this object created it."""
        self.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    # -- HTTP API (1.x) --------------------------------------------------------------

    def query(self, db: str, q: str) -> dict[str, Any]:
        """Run InfluxQL via ``GET /query`` and return the decoded JSON.

        Statement-level errors come back as ``{"results": [{"error": ...}]}`` with
        HTTP 200, so callers that care must look; HTTP errors raise RuntimeError.
        """
        params = urllib.parse.urlencode({"db": db, "q": q, "epoch": "ms"})
        return self._request("GET", f"/query?{params}")

    def command(self, q: str) -> dict[str, Any]:
        """Run a statement that changes state (CREATE/DROP) via ``POST /query``."""
        return self._request(
            "POST",
            "/query",
            urllib.parse.urlencode({"q": q}).encode(),
            content_type="application/x-www-form-urlencoded",
        )

    def create_database(self, name: str) -> None:
        """CREATE DATABASE (idempotent in InfluxDB 1.x)."""
        result = self.command(f'CREATE DATABASE "{name}"')
        error = result.get("results", [{}])[0].get("error")
        if error:
            raise RuntimeError(f"CREATE DATABASE {name}: {error}")

    def write(self, db: str, lines: str, precision: str = "ms") -> None:
        """Write line protocol via ``POST /write``; raises on anything but 204."""
        params = urllib.parse.urlencode({"db": db, "precision": precision})
        self._request("POST", f"/write?{params}", lines.encode(), content_type="text/plain")

    def _request(
        self, method: str, path: str, body: bytes | None = None, *, content_type: str = ""
    ) -> dict[str, Any]:
        req = urllib.request.Request(f"{self.url}{path}", data=body, method=method)
        if content_type:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            raise RuntimeError(f"InfluxDB {method} {path} -> HTTP {exc.code}: {detail}") from exc
        if not raw:
            return {}
        decoded: dict[str, Any] = json.loads(raw)
        return decoded


class PostgresServer(_LoopbackProcess):
    """A PostgreSQL server (Debian's ``postgresql`` package) on loopback, its cluster in one
    folder; tests make a database each (:meth:`create_database`) and drop it after.

    ``initdb`` refuses to run as root, and the server with it: as root both run as the
    ``postgres`` account (``runuser``), which owns the folder; as anyone else, as that
    user. Authentication is ``trust`` on loopback (a throwaway test cluster), and
    ``fsync`` is off: the tests stop the server cleanly and never test its disk.
    """

    BINARY = "postgres"
    DEBIAN_ROOT = Path("/usr/lib/postgresql")  # /usr/lib/postgresql/15/bin/postgres
    SUPERUSER = "postgres"

    def __init__(self, workdir: Path | None = None, *, port: int | None = None) -> None:
        # Not pytest's tmp_path: the postgres account cannot enter /tmp/pytest-of-root.
        self._take_workdir(workdir, "siltwatch-postgres-")
        self._port = port if port is not None else free_port()
        self.data_dir = self.workdir / "data"
        self.socket_dir = self.workdir / "socket"
        self.log_path = self.workdir / "postgres.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def binary(cls) -> str | None:
        """``postgres`` on PATH, else the newest Debian version's (not on PATH there)."""
        found = shutil.which(cls.BINARY)
        if found:
            return found
        versions = [p for p in cls.DEBIAN_ROOT.glob("*/bin/postgres") if p.parts[-3].isdigit()]
        return str(max(versions, key=lambda p: int(p.parts[-3]))) if versions else None

    def _tool(self, name: str) -> str:
        """``initdb``, ``pg_ctl``, ``createdb``...: from the server's own folder."""
        return str(Path(self._installed()).resolve().with_name(name))  # past /usr/local/bin links

    def _as_server_account(self, argv: list[str]) -> list[str]:
        """``argv`` run as the ``postgres`` account when we are root (initdb refuses root)."""
        if os.geteuid() != 0:
            return argv
        return ["runuser", "-u", self.SUPERUSER, "--", *argv]

    def url(self, database: str = "postgres") -> str:
        """The ``--db`` URL of one database of this server."""
        return f"postgresql://{self.SUPERUSER}@{LOOPBACK}:{self._port}/{database}"

    def _init_cluster(self) -> None:
        """``initdb`` once (a restart keeps the cluster): UTF-8, C.UTF-8 locale, trust."""
        self.socket_dir.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            account = pwd.getpwnam(self.SUPERUSER)
            _chown_tree(self.workdir, account.pw_uid, account.pw_gid)
        if (self.data_dir / "PG_VERSION").exists():
            return
        argv = [self._tool("initdb"), "-D", str(self.data_dir), "-A", "trust"]
        argv += ["-U", self.SUPERUSER, "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"]
        result = subprocess.run(
            self._as_server_account(argv), capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            raise RuntimeError(f"initdb failed ({result.returncode}):\n{result.stderr.strip()}")

    def start(self) -> None:
        """Spawn the server and return once ``pg_isready`` says it accepts connections."""
        if self.running:
            return
        binary = self._tool("postgres")
        self._init_cluster()
        argv = [binary, "-D", str(self.data_dir), "-p", str(self._port)]
        argv += ["-k", str(self.socket_dir), "-c", f"listen_addresses={LOOPBACK}"]
        argv += ["-c", "fsync=off", "-c", "full_page_writes=off"]
        self._spawn(self._as_server_account(argv), self.log_path, self._ready, "accept connections")

    def _ready(self) -> bool:
        probe = [self._tool("pg_isready"), "-q", "-h", LOOPBACK, "-p", str(self._port)]
        return subprocess.run(probe, capture_output=True, check=False).returncode == 0

    def stop(self) -> None:
        """A fast shutdown (``pg_ctl stop -m fast``: sessions are ended, not awaited)."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            argv = [self._tool("pg_ctl"), "-D", str(self.data_dir), "stop", "-m", "fast", "-w"]
            subprocess.run(
                self._as_server_account(argv), capture_output=True, check=False, timeout=30
            )
        _terminate(self._proc)  # already gone after pg_ctl; never leave it running
        self._proc = None

    def close(self) -> None:
        """Stop, and remove workdir when this object created it."""
        self.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _client(self, tool: str, *args: str) -> None:
        argv = [self._tool(tool), "-h", LOOPBACK, "-p", str(self._port), "-U", self.SUPERUSER]
        result = subprocess.run([*argv, *args], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"{tool} {' '.join(args)} failed: {result.stderr.strip()}")

    def create_database(
        self, name: str, *, icu_locale: str | None = None, template: str = "template0"
    ) -> str:
        """A new database; its URL. ``icu_locale`` (e.g. ``en-US``) gives it a
        linguistic default collation, under which ``B`` sorts after ``a``; ``template``
        another database to copy (no session may be connected to it meanwhile)."""
        args = ["-E", "UTF8", "-T", template]
        if icu_locale is not None:
            args += ["--locale-provider=icu", f"--icu-locale={icu_locale}"]
        self._client("createdb", *args, name)
        return self.url(name)

    def drop_database(self, name: str) -> None:
        """Drop a database, ending any session still connected to it."""
        self._client("dropdb", "--force", "--if-exists", name)


class SlowLink:
    """A TCP link on loopback that delays every byte by ``delay_s`` each way: a service
    that reaches the broker over a WAN (a cloud VM, a cellular modem) while the stations
    sit next to it. Closes the client side when the far side is down or closes.

    Threads, one accept loop and two per connection (a reader that stamps each chunk,
    a writer that sends it when its time comes, in order).
    """

    def __init__(self, target_port: int, delay_s: float) -> None:
        self.target_port = target_port
        self.delay_s = delay_s
        self.port = free_port()
        self._listener = socket.create_server((LOOPBACK, self.port))
        self._listener.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="slow-link", daemon=True)

    def __enter__(self) -> SlowLink:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                near, _ = self._listener.accept()
            except TimeoutError:
                continue
            try:
                far = socket.create_connection((LOOPBACK, self.target_port), timeout=2)
            except OSError:
                near.close()  # the broker is down: as a refused connection, a moment later
                continue
            for a, b in ((near, far), (far, near)):
                self._pipe(a, b)

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        chunks: list[tuple[float, bytes]] = []
        ready = threading.Condition()

        def read() -> None:
            while True:
                try:
                    data = src.recv(65536)
                except OSError:
                    data = b""
                with ready:
                    chunks.append((time.monotonic() + self.delay_s, data))
                    ready.notify()
                if not data:
                    return

        def write() -> None:
            while True:
                with ready:
                    while not chunks:
                        ready.wait()
                    due, data = chunks.pop(0)
                time.sleep(max(0.0, due - time.monotonic()))
                try:
                    if not data:
                        dst.shutdown(socket.SHUT_WR)
                        return
                    dst.sendall(data)
                except OSError:
                    src.close()
                    return

        for target in (read, write):
            threading.Thread(target=target, name="slow-link-pipe", daemon=True).start()
