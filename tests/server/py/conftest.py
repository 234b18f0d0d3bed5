"""Fixtures for testing a real kvcg-server process with redis-py.

Each server is started on an ephemeral port (--port 0); the fixture waits for
the "kvcg-server ready: ... listening=HOST:PORT" line on stdout, so nothing
races for a port, and kills the process at the end. Timeouts are generous so
the suite holds on a loaded 2-core CI machine.

Every server gets its own fresh temporary --dir (removed when it stops), so
no test loads another's snapshot or log and nothing is written into the
working directory; a test that restarts a server on the same data passes its
own --dir. Each server's stdout (start-up lines included) and stderr lines
are kept for tests that check what was logged.
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pytest
import redis

READY_TIMEOUT = 60


def pytest_addoption(parser):
    parser.addoption("--server", action="store", default=os.environ.get("KVCG_SERVER", ""),
                     help="path to the kvcg-server binary")


def server_command(binary, args):
    """The argv of a test server: ephemeral port, backend (KVCG_TEST_SERVER_BACKEND, default cpu),
    KVCG_SERVER_ARGS, then `args`."""
    # KVCG_SERVER_ARGS adds flags to every server (e.g. "--mode kvcg");
    # KVCG_TEST_SERVER_BACKEND=gpu runs the suite on the GPU backend (scripts/gpu-check.sh).
    extra = os.environ.get("KVCG_SERVER_ARGS", "").split()
    backend = os.environ.get("KVCG_TEST_SERVER_BACKEND", "cpu")
    return [binary, "--port", "0", "--backend", backend, "--io-threads", "2"] + extra + list(args)


_started = []  # every ServerProcess, so a failing test cannot leave one running


class ServerProcess:
    def __init__(self, binary, args, preexec_fn=None):
        _started.append(self)
        args = list(args)
        self.own_dir = None
        if "--dir" not in args:
            self.own_dir = tempfile.mkdtemp(prefix="kvcg-test-")
            args += ["--dir", self.own_dir]
        self.dir = args[args.index("--dir") + 1]
        self.args = server_command(binary, args)
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=preexec_fn)
        self.port = None
        self.stdout_lines = []
        self.stderr_lines = []
        deadline = time.time() + READY_TIMEOUT
        line = ""
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.stdout_lines.append(line)
            if line.startswith("kvcg-server ready:"):
                addr = line.split("listening=")[1].split()[0]
                self.port = int(addr.rsplit(":", 1)[1])
                break
        if self.port is None:
            self.proc.kill()
            out, err = self.proc.communicate(timeout=10)
            self._remove_own_dir()
            raise RuntimeError(f"kvcg-server did not start: {line!r} {out!r} {err!r}")
        # Keep draining the pipes so the server never blocks on a full pipe.
        self._drains = [
            threading.Thread(target=self._drain, args=(self.proc.stdout, self.stdout_lines), daemon=True),
            threading.Thread(target=self._drain, args=(self.proc.stderr, self.stderr_lines), daemon=True),
        ]
        for t in self._drains:
            t.start()

    @staticmethod
    def _drain(pipe, sink):
        for line in pipe:
            if sink is not None:
                sink.append(line)

    def client(self, **kw):
        kw.setdefault("socket_timeout", 30)
        return redis.Redis(host="127.0.0.1", port=self.port, **kw)

    def raw(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        return s

    def wait(self, timeout=60):
        """Waits for the process to exit; returns its exit status and lets the log pipes drain."""
        rc = self.proc.wait(timeout=timeout)
        for t in self._drains:
            t.join(timeout=10)
        return rc

    def kill(self):
        """SIGKILL (a crash): nothing is saved or flushed by the server."""
        self.proc.kill()
        self.wait()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._remove_own_dir()

    def _remove_own_dir(self):
        if self.own_dir is not None:
            shutil.rmtree(self.own_dir, ignore_errors=True)
            self.own_dir = None


@pytest.fixture(scope="session")
def server_binary(request):
    path = request.config.getoption("--server")
    if not path or not os.path.exists(path):
        pytest.skip("no kvcg-server binary given (--server=PATH)")
    return path


@pytest.fixture(scope="session")
def start_server(server_binary):
    """Factory: start_server(*extra_args) -> ServerProcess (stopped at session end)."""
    started = []

    def start(*args):
        s = ServerProcess(server_binary, args)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


@pytest.fixture(autouse=True)
def stop_servers_of_the_test():
    """Stops the servers a test started itself (a failed assertion skips its own cleanup);
    session-scoped servers exist before this fixture runs and are left alone."""
    before = len(_started)
    yield
    for s in _started[before:]:
        s.stop()
    del _started[before:]


@pytest.fixture(scope="session")
def server(start_server):
    return start_server()


@pytest.fixture
def r(server):
    c = server.client(decode_responses=True)
    c.flushall()
    yield c
    c.close()


@pytest.fixture
def b(server):
    """A client that keeps bytes (binary values: bitmaps, SETRANGE)."""
    c = server.client()
    c.flushall()
    yield c
    c.close()


@pytest.fixture
def small_bulk_len(b):
    """proto-max-bulk-len 1mb for the test (so limits are reached without 512 MB values)."""
    old = b.config_get("proto-max-bulk-len")["proto-max-bulk-len"]
    b.config_set("proto-max-bulk-len", 1024 * 1024)
    yield 1024 * 1024
    b.config_set("proto-max-bulk-len", old)


def err(client, *args):
    """The error text a command is refused with (it must be refused)."""
    with pytest.raises(redis.ResponseError) as e:
        client.execute_command(*args)
    return str(e.value)


def recv_all(sock, timeout=10.0):
    """Reads until the peer closes (or timeout); returns the bytes."""
    sock.settimeout(timeout)
    chunks = []
    try:
        while True:
            b = sock.recv(65536)
            if not b:
                break
            chunks.append(b)
    except (socket.timeout, ConnectionResetError):
        pass
    return b"".join(chunks)


def recv_until(sock, n_lines_or_marker, timeout=10.0):
    """Reads until `marker` (bytes) appears in the data."""
    sock.settimeout(timeout)
    data = b""
    while n_lines_or_marker not in data:
        b = sock.recv(65536)
        if not b:
            break
        data += b
    return data


def wait_until(predicate, timeout=60.0, what="condition", interval=0.02):
    """Polls `predicate` until it returns a true value (returned); fails after `timeout` seconds."""
    deadline = time.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def persistence_info(client):
    """INFO persistence as redis-py parses it (numbers as int/float, "ok"/"err" as str)."""
    return client.info("persistence")


def status_reply(server, *args, timeout=60.0):
    """Sends one command on a fresh connection and returns its reply line as the server
    wrote it ("+Background saving started", "-ERR ..."): redis-py turns some of them
    into True."""
    cmd = b"*%d\r\n" % len(args) + b"".join(
        b"$%d\r\n%s\r\n" % (len(a), a) for a in (x if isinstance(x, bytes) else str(x).encode() for x in args))
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as s:
        s.sendall(cmd)
        line = recv_until(s, b"\r\n", timeout=timeout)
    return line.split(b"\r\n", 1)[0].decode()
