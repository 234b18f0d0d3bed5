"""Pipelining: replies in command order, same-key order across read-modify-
write commands, and atomicity of read-modify-write under concurrency."""
import threading

import pytest
import redis

from conftest import recv_until


def test_pipeline_order_with_rmw(r):
    p = r.pipeline(transaction=False)
    p.set("k", "a")
    p.incr("k")          # fails: "a" is not an integer
    p.get("k")
    p.set("k", "1")
    p.incr("k")
    p.incr("k")
    p.get("k")
    p.append("k", "x")
    p.get("k")
    p.delete("k")
    p.incrby("k", 5)
    p.get("k")
    out = p.execute(raise_on_error=False)
    assert out[0] is True
    assert isinstance(out[1], redis.ResponseError)
    assert out[2:] == ["a", True, 2, 3, "3", 2, "3x", 1, 5, "5"]


def test_pipeline_many_incr_same_and_distinct_keys(r):
    p = r.pipeline(transaction=False)
    for i in range(500):
        p.incr("same")
        p.incr(f"k{i % 7}")
        p.get("same")
    out = p.execute()
    same = out[0::3]
    assert same == list(range(1, 501))
    assert out[2::3] == [str(i) for i in range(1, 501)]
    assert sum(int(r.get(f"k{j}")) for j in range(7)) == 500


def test_pipeline_setnx_then_set_get(r):
    p = r.pipeline(transaction=False)
    p.setnx("k", "first")
    p.setnx("k", "second")
    p.set("k", "third", xx=True, get=True)
    p.get("k")
    p.getdel("k")
    p.get("k")
    assert p.execute() == [True, False, "first", "third", "third", None]


def test_large_pipeline_order(r):
    n = 20000
    p = r.pipeline(transaction=False)
    for i in range(n):
        p.set(f"key:{i}", f"val:{i}")
    for i in range(n):
        p.get(f"key:{i}")
    out = p.execute()
    assert out[:n] == [True] * n
    assert out[n:] == [f"val:{i}" for i in range(n)]


def test_concurrent_incr_is_atomic(server):
    threads, per = 8, 300
    c0 = server.client()
    c0.delete("ctr", "app")

    def work(pipelined):
        c = server.client()
        if pipelined:
            for _ in range(per // 30):
                p = c.pipeline(transaction=False)
                for _ in range(30):
                    p.incr("ctr")
                    p.append("app", "x")
                p.execute()
        else:
            for _ in range(per):
                c.incr("ctr")
                c.append("app", "x")
        c.close()

    ts = [threading.Thread(target=work, args=(i % 2 == 0,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert int(c0.get("ctr")) == threads * per
    assert c0.strlen("app") == threads * per


def test_concurrent_incrbyfloat_and_setnx(server):
    c0 = server.client()
    c0.delete("f", "once")
    winners = []

    def work(i):
        c = server.client()
        for _ in range(100):
            c.incrbyfloat("f", 0.5)
        if c.setnx("once", str(i)):
            winners.append(i)
        c.close()

    ts = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert float(c0.get("f")) == 300.0
    assert len(winners) == 1
    assert c0.get("once") == str(winners[0]).encode()


def test_many_concurrent_clients(server):
    n = 64
    errors = []

    def work(i):
        try:
            c = server.client(decode_responses=True)
            p = c.pipeline(transaction=False)
            for j in range(50):
                p.set(f"c{i}:{j}", f"{i}-{j}")
            p.execute()
            got = c.mget([f"c{i}:{j}" for j in range(50)])
            if got != [f"{i}-{j}" for j in range(50)]:
                errors.append((i, got[:3]))
            c.close()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((i, repr(e)))

    ts = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []


def test_hello3_mid_pipeline_switches_later_replies_only(server):
    s = server.raw()
    s.sendall(b"GET nokey\r\nHELLO 3\r\nGET nokey\r\nHELLO 2\r\nGET nokey\r\nPING\r\n")
    data = recv_until(s, b"+PONG\r\n")
    s.close()
    assert data.startswith(b"$-1\r\n%7\r\n")
    rest = data[data.index(b"_\r\n"):]
    # RESP3 null for the second GET, then HELLO 2's reply as a flat array, then RESP2 null.
    assert rest.startswith(b"_\r\n*14\r\n")
    assert rest.endswith(b"$-1\r\n+PONG\r\n")
