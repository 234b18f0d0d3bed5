"""Keyspace commands (src/server/cmd_keyspace.cc) against a real kvcg-server:
TYPE, EXISTS/TOUCH, RENAME/RENAMENX, COPY, OBJECT, MEMORY USAGE, SELECT,
SWAPDB, KEYS, RANDOMKEY.

Expected replies and error texts are Redis 7.0.15's (checked against
redis-server 7.0.15 when written), except where docs/COMMANDS.md states a
difference: one database, MEMORY USAGE is kvcg's own estimate, OBJECT
ENCODING answers from the value's bytes, OBJECT IDLETIME is not tracked.
"""
import threading
import time

import pytest
import redis

from conftest import recv_until


def error_text(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


# --- TYPE, EXISTS, TOUCH

def test_type(r):
    r.set("s", "v")
    r.set("empty", "")
    assert r.type("s") == "string"
    assert r.type("empty") == "string"
    assert r.type("nokey") == "none"
    r.delete("s")
    assert r.type("s") == "none"
    assert error_text(r.execute_command, "TYPE") == "wrong number of arguments for 'type' command"
    assert error_text(r.execute_command, "TYPE", "a", "b") == "wrong number of arguments for 'type' command"


def test_exists_and_touch_count_existing_keys(r):
    r.mset({"a": "1", "b": "2"})
    assert r.exists("a", "a", "b", "c") == 3  # repeated keys count each time, as in Redis
    assert r.touch("a", "a", "b", "c") == 3
    assert r.touch("nokey") == 0
    assert r.exists("nokey") == 0
    assert error_text(r.execute_command, "TOUCH") == "wrong number of arguments for 'touch' command"


def test_binary_keys(server):
    c = server.client()
    c.flushall()
    key, val = b"k\x00\r\n\xff", bytes(range(256))
    c.set(key, val)
    assert c.type(key) == b"string"
    assert c.rename(key, b"n\x00ew") is True
    assert c.get(b"n\x00ew") == val
    assert c.exists(key) == 0
    assert c.keys(b"n\x00*") == [b"n\x00ew"]
    assert c.randomkey() == b"n\x00ew"
    c.close()


# --- RENAME / RENAMENX

def test_rename_moves_the_value(r):
    r.set("a", "hello")
    assert r.rename("a", "b") is True
    assert r.get("b") == "hello"
    assert r.exists("a") == 0
    assert r.dbsize() == 1
    # Over an existing key: replaced.
    r.set("c", "other")
    assert r.rename("b", "c") is True
    assert r.get("c") == "hello"
    assert r.exists("b") == 0
    assert r.dbsize() == 1


def test_rename_empty_and_large_values(r):
    r.set("e", "")
    assert r.rename("e", "e2") is True
    assert r.get("e2") == "" and r.exists("e") == 0
    big = "x" * (1 << 20)
    r.set("big", big)
    assert r.rename("big", "big2") is True
    assert r.get("big2") == big and r.exists("big") == 0


def test_rename_errors_and_same_key(r):
    assert error_text(r.rename, "nokey", "x") == "no such key"
    assert error_text(r.rename, "nokey", "nokey") == "no such key"
    assert error_text(r.renamenx, "nokey", "x") == "no such key"
    assert r.exists("x") == 0
    r.set("k", "v")
    assert r.rename("k", "k") is True  # existing: a no-op that answers OK
    assert r.get("k") == "v"
    assert r.renamenx("k", "k") is False  # existing: 0
    assert r.get("k") == "v"
    assert error_text(r.execute_command, "RENAME", "k") == "wrong number of arguments for 'rename' command"
    assert error_text(r.execute_command, "RENAMENX", "k", "a", "b") == \
        "wrong number of arguments for 'renamenx' command"


def test_renamenx(r):
    r.set("a", "foobar")
    assert r.renamenx("a", "b") is True
    assert r.get("b") == "foobar" and r.exists("a") == 0
    r.set("a", "foo")
    assert r.renamenx("a", "b") is False  # destination exists: nothing changes
    assert r.get("a") == "foo" and r.get("b") == "foobar"


def test_rename_in_a_pipeline_keeps_command_order(r):
    p = r.pipeline(transaction=False)
    p.set("a", "1").rename("a", "b").get("a").get("b").incr("b").rename("b", "a").get("a").exists("b")
    p.renamenx("a", "c").append("c", "x").get("c")
    assert p.execute() == [True, True, None, "1", 2, True, "2", 0, True, 2, "2x"]


def test_rename_pipeline_on_raw_socket(server):
    # Several RENAMEs and reads of their keys in one read of the socket.
    s = server.raw()
    s.sendall(b"FLUSHALL\r\nSET k0 v\r\n" + b"".join(b"RENAME k%d k%d\r\nGET k%d\r\n" % (i, i + 1, i + 1)
                                                     for i in range(20)) + b"DBSIZE\r\nPING\r\n")
    data = recv_until(s, b"+PONG\r\n")
    s.close()
    assert data == b"+OK\r\n+OK\r\n" + b"+OK\r\n$1\r\nv\r\n" * 20 + b":1\r\n+PONG\r\n"


def send_concurrently(server, payloads, n_replies):
    """Sends each payload on its own connection, all at once; returns each
    connection's first n_replies reply lines."""
    socks = [server.raw() for _ in payloads]
    barrier = threading.Barrier(len(payloads))
    replies = [None] * len(payloads)

    def worker(i):
        barrier.wait()
        socks[i].sendall(payloads[i])
        data = b""
        while data.count(b"\r\n") < n_replies:
            chunk = socks[i].recv(65536)
            assert chunk, "connection closed"
            data += chunk
        replies[i] = data.split(b"\r\n")[:n_replies]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(payloads))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    for sock in socks:
        sock.close()
    assert all(r is not None for r in replies)
    return replies


def test_concurrent_renames_of_one_key_exactly_one_wins(server):
    """As in Redis, the source goes to exactly one of concurrent RENAMEs; the
    others answer "no such key" and leave their destinations as they were
    (restored when it existed, absent when not). Each client sends a RENAME
    of every source in one write, so the clients' rounds (GET, PUT, DELETE)
    interleave on the server and most sources are raced for."""
    n_clients, n_keys = 4, 6000
    c = server.client(decode_responses=True)
    c.flushall()
    c.mset({f"src{k}": f"value{k}" for k in range(n_keys)})
    c.mset({f"dst{i}:{k}": "old" for i in range(n_clients) for k in range(1, n_keys, 2)})
    replies = send_concurrently(server, [b"".join(b"RENAME src%d dst%d:%d\r\n" % (k, i, k) for k in range(n_keys))
                                         for i in range(n_clients)], n_keys)
    for k in range(n_keys):
        results = [replies[i][k] for i in range(n_clients)]
        winners = [i for i in range(n_clients) if results[i] == b"+OK"]
        assert len(winners) == 1, (k, results)
        assert all(results[i] == b"-ERR no such key" for i in range(n_clients) if i != winners[0]), (k, results)
    got = c.mget([f"dst{i}:{k}" for k in range(n_keys) for i in range(n_clients)])
    for k in range(n_keys):
        w = [i for i in range(n_clients) if replies[i][k] == b"+OK"][0]
        for i in range(n_clients):
            expected = f"value{k}" if i == w else ("old" if k % 2 else None)
            assert got[k * n_clients + i] == expected, (k, i)
    assert c.exists(*[f"src{k}" for k in range(n_keys)]) == 0
    assert c.dbsize() == n_keys + (n_clients - 1) * (n_keys // 2)
    c.close()


def test_rename_racing_a_write_of_the_source_keeps_the_write(server):
    """A SET of the source while a RENAME runs is never lost: the end state is
    that of SET-then-RENAME (dst = new value, src gone) or RENAME-then-SET
    (dst = old value, src = new value). Repeated: a race test."""
    n_keys = 6000
    c = server.client(decode_responses=True)
    for _ in range(3):
        c.flushall()
        c.mset({f"src{k}": f"old{k}" for k in range(n_keys)})
        replies = send_concurrently(server, [
            b"".join(b"RENAME src%d dst%d\r\n" % (k, k) for k in range(n_keys)),
            b"".join(b"SET src%d new%d\r\n" % (k, k) for k in range(n_keys))], n_keys)
        assert replies[0] == [b"+OK"] * n_keys and replies[1] == [b"+OK"] * n_keys
        dst = c.mget([f"dst{k}" for k in range(n_keys)])
        src = c.mget([f"src{k}" for k in range(n_keys)])
        for k in range(n_keys):
            assert (dst[k], src[k]) in ((f"new{k}", None), (f"old{k}", f"new{k}")), k
    c.close()


def test_concurrent_ping_pong_renames_never_lose_or_duplicate(server):
    """Two clients move one value back and forth between two keys with
    RENAMENX for two seconds; at the end it is under exactly one of them."""
    a, b = server.client(decode_responses=True), server.client(decode_responses=True)
    a.flushall()
    a.set("x", "the value")
    stop = time.time() + 2
    outcomes = []  # list.append is atomic under the GIL

    def mover(c, src, dst):
        while time.time() < stop:
            try:
                outcomes.append(c.renamenx(src, dst))
            except redis.ResponseError as e:
                outcomes.append(str(e))

    threads = [threading.Thread(target=mover, args=(a, "x", "y")),
               threading.Thread(target=mover, args=(b, "y", "x"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert set(outcomes) <= {True, False, "no such key"}, set(outcomes)
    assert outcomes.count(True) > 10
    assert a.dbsize() == 1
    assert a.mget("x", "y").count("the value") == 1
    a.close()
    b.close()


# --- COPY

def test_copy(r):
    r.set("a", "foobar")
    assert r.copy("a", "b") is True
    assert r.get("b") == "foobar" and r.get("a") == "foobar"
    assert r.dbsize() == 2
    r.set("c", "hello")
    assert r.copy("c", "b") is False  # exists: not replaced without REPLACE
    assert r.get("b") == "foobar"
    assert r.copy("c", "b", replace=True) is True
    assert r.get("b") == "hello"
    r.set("b", "changed")  # the copy is independent of the original
    assert r.get("c") == "hello"
    assert r.copy("nokey", "d") is False
    assert r.exists("d") == 0
    r.set("e", "")
    assert r.copy("e", "e2") is True and r.get("e2") == ""


def test_copy_options_and_errors(r):
    r.set("a", "v")
    assert r.execute_command("COPY", "a", "b", "DB", "0") == 1
    assert r.execute_command("COPY", "a", "b", "replace", "db", "0") == 1
    assert error_text(r.execute_command, "COPY", "a", "a") == "source and destination objects are the same"
    assert error_text(r.execute_command, "COPY", "a", "a", "REPLACE") == \
        "source and destination objects are the same"
    assert error_text(r.execute_command, "COPY", "a", "b", "DB", "1") == "DB index is out of range"
    assert error_text(r.execute_command, "COPY", "a", "b", "DB", "-1") == "DB index is out of range"
    assert error_text(r.execute_command, "COPY", "a", "b", "DB", "notanumber") == \
        "value is not an integer or out of range"
    assert error_text(r.execute_command, "COPY", "a", "b", "DB", "99999999999") == \
        "value is out of range, value must between -2147483648 and 2147483647"
    assert error_text(r.execute_command, "COPY", "a", "b", "DB") == "syntax error"
    assert error_text(r.execute_command, "COPY", "a", "b", "bogus") == "syntax error"
    assert error_text(r.execute_command, "COPY", "a") == "wrong number of arguments for 'copy' command"


# --- OBJECT

@pytest.mark.parametrize("value,encoding,refcount", [
    ("1", "int", 2147483647),  # Redis's shared integers 0..9999
    ("9999", "int", 2147483647),
    ("10000", "int", 1),
    ("-1", "int", 1),
    ("-9223372036854775808", "int", 1),
    ("9223372036854775807", "int", 1),
    ("12345678901234567890", "embstr", 1),  # 20 characters but over int64
    ("007", "embstr", 1),
    ("-0", "embstr", 1),
    ("+1", "embstr", 1),
    ("1.5", "embstr", 1),
    ("", "embstr", 1),
    ("a" * 44, "embstr", 1),
    ("a" * 45, "raw", 1),
    ("1" * 45, "raw", 1),
])
def test_object_encoding_and_refcount(r, value, encoding, refcount):
    r.set("k", value)
    assert r.object("encoding", "k") == encoding
    assert r.object("refcount", "k") == refcount


def test_object_missing_key_and_errors(r):
    for sub in ("ENCODING", "REFCOUNT", "FREQ", "IDLETIME"):
        assert r.execute_command("OBJECT", sub, "nokey") is None  # Redis looks the key up first
    r.set("k", "v")
    assert error_text(r.execute_command, "OBJECT", "FREQ", "k") == (
        "An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when "
        "switching between policies at runtime LRU and LFU data will take some time to adjust.")
    assert r.execute_command("OBJECT", "IDLETIME", "k") == 0  # tracked under noeviction, as Redis does
    assert error_text(r.execute_command, "OBJECT", "bogus", "k") == "unknown subcommand 'bogus'. Try OBJECT HELP."
    assert error_text(r.execute_command, "OBJECT", "ENCODING") == \
        "wrong number of arguments for 'object|encoding' command"
    assert error_text(r.execute_command, "OBJECT", "encoding", "k", "x") == \
        "wrong number of arguments for 'object|encoding' command"
    assert error_text(r.execute_command, "OBJECT") == "wrong number of arguments for 'object' command"
    help_lines = r.execute_command("OBJECT", "HELP")
    assert help_lines[0] == "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert "ENCODING <key>" in help_lines and help_lines[-1] == "    Prints this help."


def test_object_after_incr_in_a_pipeline(r):
    p = r.pipeline(transaction=False)
    p.set("k", "abc").append("k", "d").object("encoding", "k").set("n", "5").incrby("n", 10000)
    p.object("encoding", "n").object("refcount", "n")
    assert p.execute() == [True, 4, "embstr", True, 10005, "int", 1]


# --- MEMORY

def test_memory_usage_is_key_plus_value_plus_entry_overhead(r):
    info = r.info("kvcg")
    overhead = 96 if info["backend"] == "cpu" else (16 if info["layout"] == "fixed8" else 48)
    r.set("k", "v")
    assert r.memory_usage("k") == 1 + 1 + overhead
    r.set("k", "x" * 100)
    assert r.memory_usage("k") == 1 + 100 + overhead
    r.set("longer-key", "x" * 100)
    assert r.memory_usage("longer-key") == 10 + 100 + overhead
    assert r.memory_usage("k", samples=0) == 1 + 100 + overhead
    assert r.execute_command("MEMORY", "USAGE", "k", "SAMPLES", "5") == 1 + 100 + overhead
    assert r.memory_usage("nokey") is None


def test_memory_errors_and_other_subcommands(r):
    r.set("k", "v")
    assert error_text(r.execute_command, "MEMORY", "USAGE", "k", "SAMPLES", "x") == \
        "value is not an integer or out of range"
    assert error_text(r.execute_command, "MEMORY", "USAGE", "k", "SAMPLES", "-1") == "syntax error"
    assert error_text(r.execute_command, "MEMORY", "USAGE", "k", "SAMPLES") == "syntax error"
    assert error_text(r.execute_command, "MEMORY", "USAGE", "k", "bogus") == "syntax error"
    assert error_text(r.execute_command, "MEMORY", "USAGE") == "wrong number of arguments for 'memory|usage' command"
    assert error_text(r.execute_command, "MEMORY", "bogus") == "unknown subcommand 'bogus'. Try MEMORY HELP."
    assert r.execute_command("MEMORY", "PURGE") == "OK"
    assert "not supported" in error_text(r.execute_command, "MEMORY", "DOCTOR")
    help_lines = r.execute_command("MEMORY", "HELP")
    assert help_lines[0] == "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert "USAGE <key> [SAMPLES <count>]" in help_lines


# --- SELECT, SWAPDB: one database

def test_select_only_database_zero(r):
    assert r.execute_command("SELECT", "0") is True
    assert error_text(r.execute_command, "SELECT", "1") == "DB index is out of range"
    assert error_text(r.execute_command, "SELECT", "-1") == "DB index is out of range"
    assert error_text(r.execute_command, "SELECT", "x") == "value is not an integer or out of range"
    assert error_text(r.execute_command, "SELECT", "99999999999") == \
        "value is out of range, value must between -2147483648 and 2147483647"


def test_swapdb(r):
    r.set("k", "v")
    assert r.swapdb(0, 0) is True
    assert r.get("k") == "v"
    assert error_text(r.swapdb, 0, 1) == "DB index is out of range"
    assert error_text(r.swapdb, -1, 0) == "DB index is out of range"
    assert error_text(r.swapdb, "x", 0) == "invalid first DB index"
    assert error_text(r.swapdb, 0, "x") == "invalid second DB index"
    assert error_text(r.swapdb, 99999999999, 0) == "invalid first DB index"
    assert r.get("k") == "v"


# --- KEYS

def test_keys_patterns(r):
    for key in ("key_x", "key_y", "key_z", "foo_a", "foo_b", "foo_c", "h*llo", "hallo", "hxllo", "b"):
        r.set(key, "v")
    assert sorted(r.keys("foo*")) == ["foo_a", "foo_b", "foo_c"]
    assert len(r.keys("*")) == 10
    assert sorted(r.keys("key_?")) == ["key_x", "key_y", "key_z"]
    assert sorted(r.keys("key_[xz]")) == ["key_x", "key_z"]
    assert sorted(r.keys("key_[^x]")) == ["key_y", "key_z"]
    assert sorted(r.keys("key_[a-y]")) == ["key_x", "key_y"]
    assert sorted(r.keys("h?llo")) == ["h*llo", "hallo", "hxllo"]
    assert r.keys("h\\*llo") == ["h*llo"]
    assert r.keys("b") == ["b"]
    assert r.keys("B") == []  # case-sensitive
    assert r.keys("nomatch*") == []
    assert error_text(r.execute_command, "KEYS") == "wrong number of arguments for 'keys' command"


def test_keys_empty_store_and_many_chunks(r):
    assert r.keys("*") == []
    keys = {f"key:{i}": str(i) for i in range(5000)}
    for start in range(0, 5000, 1000):
        r.mset(dict(list(keys.items())[start:start + 1000]))
    got = r.keys("*")
    assert len(got) == 5000 and set(got) == set(keys)
    assert sorted(r.keys("key:49??")) == sorted(f"key:{i}" for i in range(4900, 5000))


def test_keys_sees_earlier_commands_of_the_pipeline(r):
    p = r.pipeline(transaction=False)
    p.set("a", "1").set("b", "2").keys("*").delete("a").keys("*").rename("b", "c").keys("*")
    res = p.execute()
    assert sorted(res[2]) == ["a", "b"]
    assert res[4] == ["b"]
    assert res[6] == ["c"]


def test_keys_long_nested_pattern_is_fast(r):
    # Redis's "Regression for pattern matching long nested loops".
    r.set("a" * 40, "1")
    t0 = time.time()
    assert r.keys("a*" * 20 + "b") == []
    assert r.keys("a*" * 20) == ["a" * 40]
    assert time.time() - t0 < 5


def test_keys_resp3(server):
    c = server.client(decode_responses=True, protocol=3)
    c.flushall()
    c.set("x", "1")
    assert c.keys("*") == ["x"]
    c.close()


# --- RANDOMKEY

def test_randomkey(r):
    assert r.randomkey() is None
    r.set("x", "10")
    r.delete("x")
    assert r.randomkey() is None
    r.set("foo", "x")
    assert r.randomkey() == "foo"
    r.set("bar", "y")
    seen = {r.randomkey() for _ in range(100)}
    assert seen == {"foo", "bar"}
    assert error_text(r.execute_command, "RANDOMKEY", "x") == "wrong number of arguments for 'randomkey' command"


def test_randomkey_is_roughly_uniform(r):
    keys = [f"k{i}" for i in range(10)]
    r.mset({k: "v" for k in keys})
    p = r.pipeline(transaction=False)
    for _ in range(1000):
        p.randomkey()
    counts = {k: 0 for k in keys}
    for k in p.execute():
        counts[k] += 1  # a KeyError would be a key that does not exist
    # Binomial(1000, 0.1): mean 100, sd 9.5; 50..150 is over 5 sd each side.
    assert all(50 <= n <= 150 for n in counts.values()), counts


# --- The command table

def test_command_info_of_keyspace_commands(r):
    table = r.command()
    assert table["rename"]["arity"] == 3 and "write" in table["rename"]["flags"]
    assert (table["rename"]["first_key_pos"], table["rename"]["last_key_pos"]) == (1, 2)
    assert table["copy"]["arity"] == -3
    assert table["type"]["arity"] == 2 and "readonly" in table["type"]["flags"]
    assert table["touch"]["arity"] == -2
    assert table["keys"]["arity"] == 2 and table["randomkey"]["arity"] == 1
    assert table["swapdb"]["arity"] == 3
    assert table["object"]["arity"] == -2 and table["memory"]["arity"] == -2
