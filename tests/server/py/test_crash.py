"""The durability proof: with appendfsync always, no acknowledged write is lost
across SIGKILLs, and nothing appears that was never written.

Client threads write concurrently (SET with unique values, DEL, INCR), each on
keys it alone owns, and record every write: a write is in doubt from the moment
it is sent and acknowledged when its reply arrives. The server is killed with
SIGKILL at random moments — some while a BGSAVE runs, some during a
BGREWRITEAOF — and restarted on the same directory, many times. After each
restart, every key must hold its last acknowledged state or a state written
after it (a write whose reply the kill swallowed may or may not be there), and
DBSIZE must be within what the writes allow, so no unknown key appeared.
What the restart shows then becomes the key's known state.

KVCG_CRASH_CYCLES sets the number of kills (default 21); the run stays under a
minute on a loaded 2-core machine.
"""
import os
import random
import threading
import time

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from conftest import ServerProcess, persistence_info

ABSENT = None
THREADS = 4
KEYS_PER_THREAD = 40
COUNTERS_PER_THREAD = 4
CYCLES = int(os.environ.get("KVCG_CRASH_CYCLES", "21"))
ARGS = ["--appendonly", "yes", "--appendfsync", "always", "--save", ""]


class KeyHistory:
    """States of one key from its last known one: states[0] is certain (acknowledged
    or seen after a restart), states[acked] the last acknowledged, later ones in doubt."""

    def __init__(self):
        self.states = [ABSENT]
        self.acked = 0

    def allowed(self):
        return self.states[self.acked:]

    def current(self):
        return self.states[-1]

    def settle(self, seen):
        self.states = [seen]
        self.acked = 0


class Writer(threading.Thread):
    """Writes to its own keys until its connection dies (the kill)."""

    def __init__(self, index, port, histories, cycle, rng):
        super().__init__(daemon=True)
        self.index, self.port, self.histories, self.cycle, self.rng = index, port, histories, cycle, rng
        self.acked = 0
        self.failure = None

    def run(self):
        c = redis.Redis(port=self.port, socket_timeout=60, retry=Retry(NoBackoff(), 0))
        seq = 0
        try:
            while True:
                seq += 1
                r = self.rng.random()
                if r < 0.2:
                    key = f"t{self.index}:ctr{self.rng.randrange(COUNTERS_PER_THREAD)}".encode()
                    h = self.histories[key]
                    expected = int(h.current() or 0) + 1
                    h.states.append(str(expected).encode())
                    got = c.incr(key)
                    assert got == expected, f"INCR {key!r}: {got} != {expected}"
                elif r < 0.3:
                    key = f"t{self.index}:k{self.rng.randrange(KEYS_PER_THREAD)}".encode()
                    h = self.histories[key]
                    existed = h.current() is not ABSENT
                    h.states.append(ABSENT)
                    got = c.delete(key)
                    assert got == (1 if existed else 0), f"DEL {key!r}: {got}, existed={existed}"
                else:
                    key = f"t{self.index}:k{self.rng.randrange(KEYS_PER_THREAD)}".encode()
                    h = self.histories[key]
                    value = f"{self.index}:{self.cycle}:{seq}:".encode() + os.urandom(self.rng.randrange(8, 1500))
                    h.states.append(value)
                    assert c.set(key, value) is True
                h.acked = len(h.states) - 1
                self.acked += 1
        except (redis.ConnectionError, redis.TimeoutError, ConnectionError):
            pass  # the kill: the write in flight stays in doubt
        except Exception as e:  # noqa: BLE001 — reported by the test
            self.failure = e
        finally:
            c.close()


def verify(c, histories):
    keys = list(histories)
    seen = c.mget(keys)
    lower = upper = 0
    for key, value in zip(keys, seen):
        h = histories[key]
        allowed = h.allowed()
        assert value in allowed, (
            f"{key!r}: found {value!r:.50} but the last acknowledged state is {allowed[0]!r:.50} "
            f"({len(allowed) - 1} later write(s) in doubt)")
        lower += all(s is not ABSENT for s in allowed)
        upper += any(s is not ABSENT for s in allowed)
        h.settle(value)
    size = c.dbsize()
    assert lower <= size <= upper, f"DBSIZE {size} outside [{lower}, {upper}]: a key that was never written"


def wait_for_writes(writers, minimum, timeout=30.0):
    deadline = time.time() + timeout
    while sum(w.acked for w in writers) < minimum and time.time() < deadline:
        time.sleep(0.01)


def test_sigkill_loses_no_acknowledged_write(server_binary, tmp_path):
    rng = random.Random(int(os.environ.get("KVCG_CRASH_SEED", str(int(time.time())))))
    histories = {}
    for t in range(THREADS):
        for i in range(KEYS_PER_THREAD):
            histories[f"t{t}:k{i}".encode()] = KeyHistory()
        for i in range(COUNTERS_PER_THREAD):
            histories[f"t{t}:ctr{i}".encode()] = KeyHistory()
    kills = {"plain": 0, "bgsave": 0, "rewrite": 0}
    hit = {"bgsave": 0, "rewrite": 0}  # kills with the background job seen running just before
    total_acked = 0
    started = time.time()
    srv = ServerProcess(server_binary, ["--dir", str(tmp_path)] + ARGS)
    try:
        for cycle in range(CYCLES):
            control = srv.client()
            assert persistence_info(control)["kvcg_persistence"] == 1, "no kvcg::Durable behind the server"
            verify(control, histories)
            writers = [Writer(t, srv.port, histories, cycle, random.Random(rng.random())) for t in range(THREADS)]
            for w in writers:
                w.start()
            wait_for_writes(writers, 20)
            time.sleep(rng.uniform(0.05, 0.5))  # a random moment
            kind = ("plain", "bgsave", "rewrite")[cycle % 3]
            if kind == "bgsave":
                for _ in range(20):  # until one is seen running (they are short on a small data set)
                    try:
                        control.execute_command("BGSAVE")
                    except redis.ResponseError:
                        pass  # already in progress
                    if persistence_info(control)["rdb_bgsave_in_progress"]:
                        hit["bgsave"] += 1
                        break
            elif kind == "rewrite":
                for _ in range(20):
                    try:
                        control.execute_command("BGREWRITEAOF")
                    except redis.ResponseError:
                        pass
                    p = persistence_info(control)
                    if p["aof_rewrite_in_progress"] or p["aof_rewrite_scheduled"]:
                        hit["rewrite"] += 1
                        break
            control.close()
            srv.kill()
            kills[kind] += 1
            for w in writers:
                w.join(timeout=60)
                assert not w.is_alive(), "a writer hung after the kill"
                assert w.failure is None, f"writer {w.index}: {w.failure!r}"
                total_acked += w.acked
            srv = ServerProcess(server_binary, ["--dir", str(tmp_path)] + ARGS)
        c = srv.client()
        verify(c, histories)
        c.close()
    finally:
        srv.stop()
    elapsed = time.time() - started
    print(f"crash test: {sum(kills.values())} kills {kills}, background job seen running at {hit}, "
          f"{total_acked} acknowledged writes, {elapsed:.1f} s")
    assert sum(kills.values()) >= 20 or CYCLES < 20
    assert total_acked > 0
    assert hit["bgsave"] > 0 and hit["rewrite"] > 0, f"no kill landed during a background job: {hit}"
