#!/usr/bin/env python3
"""Runs units of Redis 7.0's own test suite against kvcg-server (and, with
--against-redis, against redis-server too) and prints the counts side by side.

Why: the redis-py suite in tests/server/py checks what we thought of; Redis's
suite checks what Redis's authors thought of, with Redis's exact replies. It
is the yardstick for "behaves as Redis 7.0" (issue 13).

    scripts/redis-suite.py                       # CPU backend, build/tools/server/kvcg-server
    scripts/redis-suite.py --against-redis       # and /usr/bin/redis-server, side by side
    scripts/redis-suite.py --backend gpu --server build-h100/tools/server/kvcg-server
    scripts/redis-suite.py --units unit/keyspace --show-failures
    scripts/redis-suite.py --strict              # exit 1 on any [err]/[exception]
    scripts/redis-suite.py --durable             # an error inside a test is an [err]; the unit goes on
    scripts/redis-suite.py --strict --min-ok 170 --missing-exit 77   # what CTest runs (redis_suite)

Needs tclsh (Debian package `tcl`) and the Redis 7.0.15 test harness with the
units (`/work/shared/redis-tests`, see its README.md): the folder comes from
--redis-tests, else $KVCG_REDIS_TESTS, else ../shared/redis-tests relative to
the repository root, else /work/shared/redis-tests (CI checks the repository
out elsewhere). The folder is copied into a temporary directory first
(the harness writes under tests/tmp, and the shared copy is read-only).

What it does: starts kvcg-server itself (--port 0, its own temporary --dir,
--save "", --backend cpu unless --backend says otherwise, plus
--server-args), then runs each unit in its own harness process:

    runtest --host 127.0.0.1 --port P --single UNIT --singledb --ignore-encoding
            --ignore-digest --tags -needs:debug --clients 1
            --skipfile tests/redis-suite/skipfile.txt

- --singledb: kvcg has one database (SELECT 0 only);
- --ignore-encoding / --ignore-digest: no OBJECT ENCODING assertions on
  internal layouts, no DEBUG DIGEST;
- --tags -needs:debug: DEBUG (RELOAD, SLEEP, SET-ACTIVE-EXPIRE ...) is Redis
  internals that kvcg does not have;
- the skip file lists exact test names skipped with a `# why` above each (at
  most 45, never a string-family test; see the file).
External-server mode also skips tests tagged external:skip, as with Redis.

It prints, per unit and in total, the number of [ok], [err], [exception],
[skip] (skip file) and [ignore] (tags) lines of the harness. An [exception]
aborts the rest of its unit, so its later tests are not counted at all. A
unit that times out or whose harness dies counts as one exception. Exit
status: 0 unless --strict is given and kvcg-server had an [err] or
[exception], or --min-ok N is given and it had fewer than N [ok] (then 1);
--missing-exit (default 2) when tclsh or the test-suite folder is missing;
2 when something else could not be run at all (no kvcg-server binary, the
server did not start). kvcg-server is restarted before a unit if it died
(the report says so).

CTest runs it (tests/server/CMakeLists.txt, test redis_suite, label server:
--strict --min-ok 170, exit 77 = skipped when tclsh or the units are
missing); the five units take well under a minute on the CPU backend.
"""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_UNITS = ["unit/type/string", "unit/type/incr", "unit/expire", "unit/keyspace", "unit/scan"]
KINDS = ["ok", "err", "exception", "skip", "ignore"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")
STATUS_LINE = re.compile(r"^\[(ok|err|exception|skip|ignore)\]: (.*)$")
READY_TIMEOUT = 120


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--redis-tests", default="",
                   help="the Redis test-suite folder (default $KVCG_REDIS_TESTS, ../shared/redis-tests "
                        "relative to the repository root, or /work/shared/redis-tests)")
    p.add_argument("--server", default=os.environ.get("KVCG_SERVER",
                                                     os.path.join(ROOT, "build", "tools", "server", "kvcg-server")),
                   help="kvcg-server binary (default $KVCG_SERVER or build/tools/server/kvcg-server)")
    p.add_argument("--backend", default="cpu", help="kvcg-server --backend (cpu, gpu, auto); default cpu")
    p.add_argument("--server-args", default="", help="more kvcg-server flags, space separated")
    p.add_argument("--against-redis", action="store_true", help="also run the units against redis-server")
    p.add_argument("--redis-server", default=shutil.which("redis-server") or "/usr/bin/redis-server",
                   help="redis-server binary for --against-redis")
    p.add_argument("--units", nargs="+", default=DEFAULT_UNITS, help="units to run (default: the five of issue 13)")
    p.add_argument("--skipfile", default=os.path.join(ROOT, "tests", "redis-suite", "skipfile.txt"))
    p.add_argument("--timeout", type=int, default=120,
                   help="harness --timeout: seconds without progress before it gives up (default 120)")
    p.add_argument("--unit-timeout", type=int, default=900, help="wall-clock limit per unit (default 900 s)")
    p.add_argument("--baseport", type=int, default=int(os.environ.get("KVCG_SUITE_BASEPORT", "23300")),
                   help="harness --baseport (its own ports sit just below it)")
    p.add_argument("--strict", action="store_true", help="exit 1 on any kvcg [err] or [exception]")
    p.add_argument("--min-ok", type=int, default=0, help="exit 1 when kvcg-server has fewer [ok] in total")
    p.add_argument("--missing-exit", type=int, default=2,
                   help="exit status when tclsh or the test-suite folder is missing (CTest: 77 = skipped)")
    p.add_argument("--durable", action="store_true",
                   help="harness --durable: an error inside a test (e.g. an unknown command) counts as [err] "
                        "and the unit goes on, instead of an [exception] that ends the unit")
    p.add_argument("--show-failures", action="store_true", help="print each [err]/[exception] with its details")
    p.add_argument("--log-dir", default="", help="keep each unit's harness output here (default: discarded)")
    return p.parse_args()


class Server:
    """A server process on a local port, stopped with SIGTERM (SIGKILL after 30 s)."""

    def __init__(self, name, argv, workdir, port=None):
        self.name = name
        self.argv = argv
        self.workdir = workdir
        self.log_path = os.path.join(workdir, name + ".log")
        self.port = port
        self.proc = None

    def start_kvcg(self):
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=log, text=True)
        deadline = time.time() + READY_TIMEOUT
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            log.write(line)
            if line.startswith("kvcg-server ready:"):
                addr = line.split("listening=")[1].split()[0]
                self.port = int(addr.rsplit(":", 1)[1])
                # Keep draining stdout into the log so the server never blocks.
                import threading
                threading.Thread(target=self._drain, args=(self.proc.stdout, log), daemon=True).start()
                return
        self.stop()
        raise RuntimeError(f"{self.name} did not start; see {self.log_path}")

    @staticmethod
    def _drain(pipe, sink):
        for line in pipe:
            sink.write(line)
            sink.flush()

    def start_redis(self):
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + READY_TIMEOUT
        while time.time() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.name} did not start; see {self.log_path}")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_kvcg(args, workdir):
    data = tempfile.mkdtemp(prefix="kvcg-data-", dir=workdir)
    argv = [args.server, "--port", "0", "--backend", args.backend, "--dir", data, "--save", ""]
    argv += args.server_args.split()
    s = Server("kvcg-server", argv, workdir)
    s.start_kvcg()
    return s


def make_redis(args, workdir):
    data = tempfile.mkdtemp(prefix="redis-data-", dir=workdir)
    port = free_port()
    argv = [args.redis_server, "--port", str(port), "--bind", "127.0.0.1", "--dir", data, "--save", "",
            "--appendonly", "no", "--daemonize", "no"]
    s = Server("redis-server", argv, workdir, port)
    s.start_redis()
    return s


MAX_SKIPPED = 45


def check_skipfile(path):
    """The skip file's rules (issue 13): at most MAX_SKIPPED test names, each
    directly under a "# why: ..." line. Returns an error text, or "" if fine."""
    names = 0
    previous = ""
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                names += 1
                if not previous.startswith("# why"):
                    return f"{path}:{n}: test name without a '# why' line above it: {line!r}"
            previous = line
    if names > MAX_SKIPPED:
        return f"{path}: {names} test names, more than the {MAX_SKIPPED} allowed"
    return ""


def run_unit(args, suite_dir, unit, port, log_name):
    """Runs one unit; returns (counts dict, list of (kind, name, details), note)."""
    cmd = ["tclsh", "tests/test_helper.tcl", "--host", "127.0.0.1", "--port", str(port), "--single", unit,
           "--singledb", "--ignore-encoding", "--ignore-digest", "--tags", "-needs:debug", "--clients", "1",
           "--timeout", str(args.timeout), "--baseport", str(args.baseport)]
    if args.durable:
        cmd.append("--durable")
    if args.skipfile:
        cmd += ["--skipfile", os.path.abspath(args.skipfile)]
    note = ""
    try:
        done = subprocess.run(cmd, cwd=suite_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=args.unit_timeout, start_new_session=True)
        out = done.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        note = f"killed after {args.unit_timeout} s"
    out = ANSI.sub("", out)
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)
        with open(os.path.join(args.log_dir, log_name), "w") as f:
            f.write(out)
    counts = {k: 0 for k in KINDS}
    failures = []
    lines = out.splitlines()
    for i, line in enumerate(lines):
        m = STATUS_LINE.match(line)
        if not m:
            continue
        kind, name = m.group(1), m.group(2)
        counts[kind] += 1
        if kind in ("err", "exception"):
            details = []
            for nxt in lines[i + 1:i + 8]:
                if STATUS_LINE.match(nxt) or nxt.startswith("[") and "done]" in nxt:
                    break
                details.append(nxt)
            failures.append((kind, name, "\n".join(d for d in details if d.strip())))
    finished = any(re.match(r"^\[\d+/\d+ done\]: " + re.escape(unit) + r"\b", l) for l in lines)
    if not finished and counts["exception"] == 0:
        # Timed out (harness [TIMEOUT] or our kill) or the harness died.
        counts["exception"] += 1
        why = note or next((l for l in lines if "TIMEOUT" in l), "harness ended without finishing the unit")
        failures.append(("exception", "(unit did not finish)", why))
        note = note or "did not finish"
    return counts, failures, note


SUITE_CANDIDATES = [os.path.join(ROOT, "..", "shared", "redis-tests"), "/work/shared/redis-tests"]


def find_redis_tests(given):
    """The test-suite folder: --redis-tests, else $KVCG_REDIS_TESTS, else the
    first of SUITE_CANDIDATES that holds the harness. Returns (path, tried)."""
    if given or os.environ.get("KVCG_REDIS_TESTS"):
        path = os.path.abspath(given or os.environ["KVCG_REDIS_TESTS"])
        return path, [path]
    tried = [os.path.abspath(c) for c in SUITE_CANDIDATES]
    for path in tried:
        if os.path.exists(os.path.join(path, "tests", "test_helper.tcl")):
            return path, tried
    return tried[0], tried


def main():
    args = parse_args()
    if shutil.which("tclsh") is None:
        print("redis-suite: tclsh not found (apt-get install tcl): not run", file=sys.stderr)
        return args.missing_exit
    tests, tried = find_redis_tests(args.redis_tests)
    if not os.path.exists(os.path.join(tests, "tests", "test_helper.tcl")):
        print(f"redis-suite: no Redis test suite at {' or '.join(tried)} (set --redis-tests or KVCG_REDIS_TESTS): "
              "not run", file=sys.stderr)
        return args.missing_exit
    if not os.access(args.server, os.X_OK):
        print(f"redis-suite: no kvcg-server at {args.server} (build it, or --server PATH)", file=sys.stderr)
        return 2

    if args.skipfile:
        problem = check_skipfile(args.skipfile)
        if problem:
            print(f"redis-suite: {problem}", file=sys.stderr)
            return 2

    workdir = tempfile.mkdtemp(prefix="kvcg-redis-suite-")
    suite_dir = os.path.join(workdir, "redis-tests")
    shutil.copytree(tests, suite_dir)
    for base, dirs, files in os.walk(suite_dir):  # the shared copy is read-only
        for n in dirs + files:
            p = os.path.join(base, n)
            os.chmod(p, os.stat(p).st_mode | 0o200)

    sides = [("kvcg", make_kvcg)] + ([("redis", make_redis)] if args.against_redis else [])
    results = {}  # side -> unit -> (counts, failures, note)
    rc = 0
    try:
        for side, make in sides:
            results[side] = {}
            try:
                server = make(args, workdir)
            except (RuntimeError, OSError) as e:
                print(f"redis-suite: {e}", file=sys.stderr)
                return 2
            try:
                for unit in args.units:
                    note = ""
                    if not server.alive():
                        note = f"server had exited (status {server.proc.returncode}); restarted. "
                        server = make(args, workdir)
                    t0 = time.time()
                    counts, failures, unit_note = run_unit(args, suite_dir, unit, server.port,
                                                           f"{side}-{unit.replace('/', '_')}.log")
                    if not server.alive():
                        unit_note += f" server exited (status {server.proc.returncode})"
                    results[side][unit] = (counts, failures, (note + unit_note).strip())
                    print(f"[{side}] {unit}: " + " ".join(f"{k}={counts[k]}" for k in KINDS) +
                          f" ({time.time() - t0:.0f} s){' — ' + (note + unit_note).strip() if (note + unit_note).strip() else ''}",
                          flush=True)
            finally:
                server.stop()
    finally:
        if args.log_dir:
            for n in os.listdir(workdir):
                if n.endswith(".log"):
                    shutil.copy(os.path.join(workdir, n), os.path.join(args.log_dir, n))
        shutil.rmtree(workdir, ignore_errors=True)

    if args.show_failures:
        for side in results:
            for unit, (_, failures, _) in results[side].items():
                for kind, name, details in failures:
                    print(f"\n[{side}] {unit} [{kind}]: {name}")
                    if details:
                        print("    " + details.replace("\n", "\n    "))

    # Side-by-side table.
    print()
    width = 7 * len(KINDS) - 1
    head = f"{'unit':<18}" + "".join(f" | {side + '-server':^{width}}" for side in results)
    print(head)
    print(f"{'':<18}" + "".join(" | " + " ".join(f"{k[:5]:>6}" for k in KINDS) for _ in results))
    print("-" * len(head))
    totals = {side: {k: 0 for k in KINDS} for side in results}
    for unit in args.units:
        row = f"{unit:<18}"
        for side in results:
            counts = results[side][unit][0]
            for k in KINDS:
                totals[side][k] += counts[k]
            row += " | " + " ".join(f"{counts[k]:>6}" for k in KINDS)
        print(row)
    print("-" * len(head))
    print(f"{'total':<18}" + "".join(" | " + " ".join(f"{totals[s][k]:>6}" for k in KINDS) for s in results))
    bad = totals["kvcg"]["err"] + totals["kvcg"]["exception"]
    if args.strict and bad:
        print(f"\nredis-suite: {bad} kvcg [err]/[exception] (--strict)")
        rc = 1
    if totals["kvcg"]["ok"] < args.min_ok:
        print(f"\nredis-suite: {totals['kvcg']['ok']} kvcg [ok], fewer than --min-ok {args.min_ok}")
        rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
