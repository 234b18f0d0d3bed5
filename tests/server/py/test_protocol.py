"""Malformed input: the exact Redis protocol error, then the connection is
closed after the replies to the commands before it. Never a crash or hang."""
import socket

import pytest

from conftest import recv_all


def exchange(server, payload):
    s = server.raw()
    s.sendall(payload)
    try:
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    data = recv_all(s)
    s.close()
    return data


@pytest.mark.parametrize("payload,error", [
    (b"*abc\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*3000000000\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*1\r\nx3\r\nGET\r\n", b"-ERR Protocol error: expected '$', got 'x'\r\n"),
    (b"*1\r\n$-5\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$abc\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$999999999999\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b'SET "a b\r\n', b"-ERR Protocol error: unbalanced quotes in request\r\n"),
    (b"*" + b"1" * 70000, b"-ERR Protocol error: too big mbulk count string\r\n"),
    (b"*1\r\n$" + b"1" * 70000, b"-ERR Protocol error: too big bulk count string\r\n"),
    (b"GET " + b"k" * 70000, b"-ERR Protocol error: too big inline request\r\n"),
])
def test_protocol_errors(server, payload, error):
    assert exchange(server, payload) == error


def test_replies_before_error_are_sent(server):
    data = exchange(server, b"PING\r\n*1\r\n$4\r\nPING\r\n*x\r\nPING\r\n")
    assert data == b"+PONG\r\n+PONG\r\n-ERR Protocol error: invalid multibulk length\r\n"


def test_empty_commands_are_ignored(server):
    data = exchange(server, b"*0\r\n*-1\r\n\r\n\n   \r\nPING\r\n")
    assert data == b"+PONG\r\n"


def test_split_across_reads(server):
    s = server.raw()
    msg = b"*3\r\n$3\r\nSET\r\n$5\r\nsplit\r\n$10\r\n0123456789\r\n*2\r\n$3\r\nGET\r\n$5\r\nsplit\r\n"
    for b in msg:
        s.sendall(bytes([b]))
    s.shutdown(socket.SHUT_WR)
    assert recv_all(s) == b"+OK\r\n$10\r\n0123456789\r\n"
    s.close()


def test_server_survives_garbage(server):
    import random
    rnd = random.Random(7)
    for _ in range(50):
        payload = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 300)))
        exchange(server, payload)
    c = server.client()
    assert c.ping() is True
