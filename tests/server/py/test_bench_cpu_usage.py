"""bench/server/cpu_usage.py: the CPU a server benchmark records per server
thread and for its client, checked against a live kvcg-server."""
import os
import socket
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench", "server"))
import cpu_usage  # noqa: E402



def send_sets(s, n):
    """n pipelined SETs; waits for their n +OK replies."""
    s.sendall(b"".join(b"*3\r\n$3\r\nSET\r\n$6\r\ncpu:%02d\r\n$1\r\nx\r\n" % (i % 100) for i in range(n)))
    want, got = n * len(b"+OK\r\n"), 0
    while got < want:
        chunk = s.recv(65536)
        assert chunk, "server closed the connection"
        got += len(chunk)


def test_window_names_the_server_threads_and_counts_their_work(server):
    window = cpu_usage.Window(server.proc.pid).start()
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.settimeout(30)
        for _ in range(20):
            send_sets(s, 5000)
    # A client process of ours: its CPU is the client side of the record.
    subprocess.run([sys.executable, "-c", "sum(range(5_000_000))"], check=True)
    rec = window.stop(ops_per_sec=1e6)
    threads = rec["server_threads"]
    assert "kvcg-io" in threads, threads  # the I/O loops, named by the server
    assert threads["kvcg-io"]["threads"] == 2  # the fixture's --io-threads 2
    io = threads["kvcg-io"]["user_cores"] + threads["kvcg-io"]["sys_cores"]
    assert io > 0
    server_cores = rec["server_user_cores"] + rec["server_sys_cores"]
    assert abs(server_cores - sum(t["user_cores"] + t["sys_cores"] for t in threads.values())) < 1e-6
    assert rec["client_user_cores"] > 0
    # The same quantity summed in another order: equal up to rounding.
    assert rec["server_cpu_ns_per_op"] == pytest.approx(server_cores / 1e6 * 1e9, rel=1e-12)
    assert "kvcg-io 2x" in cpu_usage.summary(rec)


def test_window_of_a_gone_process_records_nothing():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert cpu_usage.Window(p.pid).start().stop() == {}
    assert cpu_usage.summary({}) == "cpu: not measured"
