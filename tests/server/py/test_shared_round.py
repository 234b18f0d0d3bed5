"""The I/O thread's shared round (src/server/shared_round.h): the commands of
several connections go to the store as one batch, each connection still gets
its own replies in its own order; and with the engine, a connection whose ops
were all hot-cache hits is answered from the early answers."""
import os
import threading

import pytest

from conftest import recv_until


def info_kvcg(client):
    return client.info("kvcg")


def test_connections_share_batches_and_keep_their_own_order(start_server):
    srv = start_server()
    clients, rounds, depth = 16, 40, 16
    errors = []
    go = threading.Barrier(clients)

    def work(ci):
        c = srv.client(decode_responses=True)
        go.wait()
        try:
            for rnd in range(rounds):
                p = c.pipeline(transaction=False)
                for j in range(depth):
                    p.set(f"c{ci}:k{j}", f"{rnd}:{j}")
                    p.get(f"c{ci}:k{j}")
                    p.incr(f"c{ci}:n")
                out = p.execute()
                want = []
                for j in range(depth):
                    want += [True, f"{rnd}:{j}", rnd * depth + j + 1]
                if out != want:
                    errors.append((ci, rnd, out[:6]))
                    return
        except Exception as e:  # noqa: BLE001
            errors.append((ci, repr(e)))
        finally:
            c.close()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    info = info_kvcg(srv.client())
    # Sixteen clients pipelining at once on two I/O threads: passes of a loop
    # found several connections ready and sent their rounds together.
    assert float(info["avg_batch_clients"]) > 1.0, info


def test_replies_of_one_read_stay_in_order_across_rounds(start_server):
    srv = start_server()
    s = srv.raw()
    # INCR (a read-modify-write) ends a round; the SETs and GETs around it on
    # the same key must still answer in command order.
    s.sendall(b"SET x 1\r\nINCR x\r\nGET x\r\nINCR x\r\nSET x 7\r\nGET x\r\nPING\r\n")
    data = recv_until(s, b"+PONG\r\n", timeout=30)
    assert data == b"+OK\r\n:2\r\n$1\r\n2\r\n:3\r\n+OK\r\n$1\r\n7\r\n+PONG\r\n"


def test_hot_hits_are_answered_early(start_server):
    # hot-only: every key is served by the hot cache; after the compulsory
    # miss every op on it is a hit, answered while the engine routes.
    if "--mode" in os.environ.get("KVCG_SERVER_ARGS", "").split():
        pytest.skip("KVCG_SERVER_ARGS already sets --mode")
    srv = start_server("--mode", "hot-only")
    c = srv.client(decode_responses=True)
    c.set("h", "v")
    c.get("h")
    before = int(info_kvcg(c)["early_rounds"])
    p = c.pipeline(transaction=False)
    for i in range(50):
        p.get("h")
        p.set("h", f"v{i}")
        p.incr("n")  # a CAS round after the read, also a hit once cached
    out = p.execute()
    assert out[0] == "v" and out[-2] is True and out[-1] == 50
    assert out[3 * 49 + 0] == "v48"
    after = int(info_kvcg(c)["early_rounds"])
    assert after > before
