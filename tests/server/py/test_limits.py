"""Limits: proto-max-bulk-len, multibulk length, maxclients, idle timeout,
client output-buffer limit, query-buffer limit, store limits."""
import socket
import time

import pytest
import redis

from conftest import recv_all


def test_proto_max_bulk_len(start_server):
    srv = start_server("--proto-max-bulk-len", "1mb")
    s = srv.raw()
    s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (2 * 1024 * 1024))
    assert recv_all(s) == b"-ERR Protocol error: invalid bulk length\r\n"
    s.close()
    c = srv.client()
    assert c.set("k", b"x" * (1024 * 1024)) is True
    # APPEND past the limit is refused, the value stays.
    with pytest.raises(redis.ResponseError, match="string exceeds maximum allowed size"):
        c.append("k", "y")
    assert c.strlen("k") == 1024 * 1024


def test_max_multibulk_len(start_server):
    srv = start_server("--proto-max-multibulk-len", "5")
    s = srv.raw()
    s.sendall(b"*6\r\n")
    assert recv_all(s) == b"-ERR Protocol error: invalid multibulk length\r\n"
    c = srv.client(decode_responses=True)
    assert c.mget("a", "b", "c", "d") == [None] * 4


def test_maxclients(start_server):
    srv = start_server("--maxclients", "3")
    keep = [srv.client() for _ in range(3)]
    for c in keep:
        assert c.ping()
    s = srv.raw()
    assert recv_all(s, timeout=10) == b"-ERR max number of clients reached\r\n"
    s.close()
    keep[0].close()
    time.sleep(0.5)
    again = srv.client()
    assert again.ping()


def test_idle_timeout(start_server):
    srv = start_server("--timeout", "1")
    s = srv.raw()
    s.sendall(b"PING\r\n")
    start = time.time()
    data = recv_all(s, timeout=15)
    assert data == b"+PONG\r\n"
    assert time.time() - start < 10
    busy = srv.client()
    for _ in range(4):
        assert busy.ping()
        time.sleep(0.4)


def test_output_buffer_limit_disconnects_slow_reader(start_server):
    srv = start_server("--client-output-buffer-limit", "1mb")
    c = srv.client()
    c.set("big", b"x" * (512 * 1024))
    s = srv.raw()
    # 64 GETs of 512 KiB = 32 MiB of replies that we never read.
    s.sendall(b"GET big\r\n" * 64)
    time.sleep(2)
    data = recv_all(s, timeout=10)
    assert len(data) < 64 * 512 * 1024  # cut off, not everything was delivered
    s.close()
    assert c.ping()


def test_backpressure_delivers_everything_to_slow_reader(server):
    c = server.client()
    c.set("mid", b"y" * (64 * 1024))
    s = server.raw()
    n = 400  # 25 MiB of replies, far over the 1 MiB high-water mark
    s.sendall(b"GET mid\r\n" * n)
    time.sleep(1)
    s.shutdown(socket.SHUT_WR)
    data = recv_all(s, timeout=30)
    assert len(data) == n * (len(b"$65536\r\n") + 64 * 1024 + 2)
    s.close()


def test_query_buffer_limit(start_server):
    srv = start_server("--client-query-buffer-limit", "2mb", "--proto-max-bulk-len", "2mb")
    s = srv.raw()
    # Many arguments, each under the bulk limit, together over the buffer limit.
    s.sendall(b"*100\r\n$3\r\nSET\r\n")
    chunk = b"$1048576\r\n" + b"z" * 1048576 + b"\r\n"
    try:
        for _ in range(4):
            s.sendall(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert recv_all(s, timeout=10) == b""
    s.close()
    assert srv.client().ping()


def test_store_key_limit(start_server):
    srv = start_server("--max-key-bytes", "16", "--max-keys", "3")
    c = srv.client()
    with pytest.raises(redis.ResponseError, match="key is too large"):
        c.set("k" * 17, "v")
    for i in range(3):
        c.set(f"k{i}", "v")
    with pytest.raises(redis.ResponseError, match="used memory > 'maxmemory'"):  # the OOM error
        c.set("k3", "v")
    assert c.dbsize() == 3
