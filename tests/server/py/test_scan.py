"""SCAN against a real kvcg-server: full iterations (redis-py scan_iter and a
hand-driven cursor), COUNT, MATCH, TYPE, Redis 7.0's argument errors and
cursor parsing, ordering after the connection's earlier writes (SCAN is a
barrier), and Redis's guarantee while another client writes: every key
present for the whole iteration is returned at least once."""
import threading
import time

import pytest
import redis


def populate(client, keys, value="v"):
    pipe = client.pipeline(transaction=False)
    for i, key in enumerate(keys):
        pipe.set(key, value)
        if i % 500 == 499:
            pipe.execute()
    pipe.execute()


def raw_scan(client):
    """`client` with SCAN replies as the server wrote them (the cursor a string)."""
    client.set_response_callback("SCAN", lambda response, **options: response)
    return client


def iterate(client, count=None, **kw):
    """Drives SCAN by hand; returns (keys returned, in order, with repeats; number of calls)."""
    args = {} if count is None else {"count": count}
    cursor, keys, calls = 0, [], 0
    while True:
        cursor, batch = client.scan(cursor, **args, **kw)
        calls += 1
        keys.extend(batch)
        if cursor == 0:
            return keys, calls
        assert calls < 100000, "SCAN never came back to cursor 0"


def test_scan_empty_database(r):
    assert r.scan(0) == (0, [])
    assert raw_scan(r).execute_command("SCAN", "0", "COUNT", "1") == ["0", []]


def test_scan_iter_returns_every_key(r):
    keys = {f"key:{i}" for i in range(1000)}
    populate(r, keys)
    assert set(r.scan_iter()) == keys
    got, calls = iterate(r)
    assert set(got) == keys
    assert calls >= 2, "1000 keys at the default COUNT 10 in one call"


def test_scan_binary_keys(server):
    c = server.client()
    c.flushall()
    keys = {b"a\x00b", b"\r\n", bytes(range(256)), b"", b"\xff" * 300}
    for k in keys:
        c.set(k, b"x")
    assert set(c.scan_iter(count=2)) == keys


def test_scan_count(r):
    keys = {f"key:{i}" for i in range(1000)}
    populate(r, keys)
    for count in (1, 10, 100, 1000, 100000):
        got, calls = iterate(r, count=count)
        assert set(got) == keys, count
        # About COUNT keys a call: never a call per bucket, nor a key per call at a large COUNT.
        assert calls <= 2 * len(keys) // count + 5, (count, calls)
    assert iterate(r, count=100000)[1] == 1


def test_scan_cursor_is_an_unsigned_decimal(r):
    populate(r, [f"key:{i}" for i in range(300)])
    raw_scan(r)
    cursor, _ = r.execute_command("SCAN", "0", "COUNT", "5")
    assert cursor != "0" and cursor.isdigit() and not cursor.startswith("0")
    assert 0 < int(cursor) < 2**64
    # Redis parses the cursor with strtoul: a sign, leading zeros and an
    # empty string are accepted; whatever the store makes of an unknown
    # cursor, the reply is a cursor and keys, never an error.
    for arg in ("+0", "007", "", "-1", "18446744073709551615", cursor):
        c, ks = r.execute_command("SCAN", arg, "COUNT", "5")
        assert c.isdigit(), arg
        assert all(k.startswith("key:") for k in ks)


def test_scan_cursor_zero_after_the_end_starts_over(r):
    keys = {f"key:{i}" for i in range(200)}
    populate(r, keys)
    for _ in range(3):
        assert set(iterate(r, count=7)[0]) == keys


def test_scan_match(r):
    populate(r, [f"key:{i}" for i in range(1000)] + [f"other:{i}" for i in range(100)] + ["a*b", "axb"])
    assert len(set(iterate(r, match="key:1??")[0])) == 100
    assert set(iterate(r, match="other:*", count=1000)[0]) == {f"other:{i}" for i in range(100)}
    assert set(iterate(r, match="a\\*b")[0]) == {"a*b"}
    assert set(iterate(r, match="a[*x]b")[0]) == {"a*b", "axb"}
    assert set(iterate(r, match="KEY:*")[0]) == set(), "MATCH is case-sensitive"
    assert len(set(iterate(r, match="*")[0])) == 1102
    # A step whose keys all fail the pattern is an empty array, not the end.
    cursor, batch = r.scan(0, match="nothing-matches-*", count=10)
    assert batch == [] and cursor != 0


def test_scan_type(r):
    keys = {f"key:{i}" for i in range(300)}
    populate(r, keys)
    assert set(iterate(r, _type="string")[0]) == keys
    assert set(iterate(r, _type="STRING")[0]) == keys
    for other in ("list", "set", "zset", "hash", "stream", "none"):
        assert iterate(r, _type=other)[0] == [], other
    # Redis 7.0 does not check the name: an unknown type matches nothing.
    assert iterate(r, _type="no-such-type")[0] == []
    got = iterate(r, _type="string", match="key:2*", count=50)[0]
    assert set(got) == {k for k in keys if k.startswith("key:2")}


@pytest.mark.parametrize("args,error", [
    (["x"], "ERR invalid cursor"),
    (["1x"], "ERR invalid cursor"),
    ([" 1"], "ERR invalid cursor"),
    (["99999999999999999999"], "ERR invalid cursor"),
    (["0", "COUNT", "0"], "ERR syntax error"),
    (["0", "COUNT", "-1"], "ERR syntax error"),
    (["0", "COUNT", "x"], "ERR value is not an integer or out of range"),
    (["0", "COUNT", "01"], "ERR value is not an integer or out of range"),
    (["0", "COUNT", "99999999999999999999"], "ERR value is not an integer or out of range"),
    (["0", "COUNT"], "ERR syntax error"),
    (["0", "MATCH"], "ERR syntax error"),
    (["0", "TYPE"], "ERR syntax error"),
    (["0", "BOGUS", "1"], "ERR syntax error"),
    (["0", "MATCH", "*", "COUNT", "0"], "ERR syntax error"),
    ([], "ERR wrong number of arguments for 'scan' command"),
])
def test_scan_errors(r, args, error):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("SCAN", *args)
    assert str(e.value) == error.removeprefix("ERR ")


def test_scan_options_repeat_and_mix_case(r):
    populate(r, [f"key:{i}" for i in range(100)])
    cursor, keys = raw_scan(r).execute_command("scan", "0", "count", "1", "CoUnT", "1000", "match", "x*", "MATCH", "key:9*")
    assert cursor == "0"
    assert set(keys) == {"key:9"} | {f"key:9{i}" for i in range(10)}


def test_scan_sees_the_connections_earlier_writes(server):
    """SCAN is a barrier: in one pipeline it runs after the SETs and DELs before it."""
    c = raw_scan(server.client(decode_responses=True))
    c.flushall()
    populate(c, [f"old:{i}" for i in range(20)])
    pipe = c.pipeline(transaction=False)
    for i in range(50):
        pipe.set(f"new:{i}", "v")
    for i in range(10):
        pipe.delete(f"old:{i}")
    pipe.execute_command("SCAN", "0", "COUNT", "100000")
    cursor, keys = pipe.execute()[-1]
    assert cursor == "0"
    assert set(keys) == {f"new:{i}" for i in range(50)} | {f"old:{i}" for i in range(10, 20)}


def test_scan_command_info(r):
    info = r.execute_command("COMMAND", "INFO", "scan")["scan"]
    assert (info["arity"], info["first_key_pos"], info["flags"]) == (-2, 0, ["readonly"])


@pytest.mark.parametrize("count", [10, 100])
def test_scan_guarantee_while_another_client_writes(server, count):
    """Keys present for the whole iteration are returned at least once while another
    client inserts many new keys (the tables grow several times over) and deletes and
    rewrites others."""
    c = server.client(decode_responses=True)
    c.flushall()
    stable = {f"stable:{i}" for i in range(2000)}
    doomed = [f"doomed:{i}" for i in range(2000)]
    populate(c, sorted(stable) + doomed)
    stop = threading.Event()
    errors = []
    written = [0]

    def writer():
        w = server.client(decode_responses=True)
        try:
            n = 0
            while not stop.is_set() and n < 40000:
                pipe = w.pipeline(transaction=False)
                for i in range(n, n + 200):
                    pipe.set(f"new:{i}", "v")
                for i in range(n // 20, n // 20 + 10):
                    if i < len(doomed):
                        pipe.delete(doomed[(i * 7919) % len(doomed)])
                pipe.execute()
                n += 200
                written[0] = n
        except Exception as e:  # reported by the main thread
            errors.append(e)
        finally:
            w.close()

    t = threading.Thread(target=writer)
    t.start()
    try:
        # The iteration must overlap the writes: after its first step it
        # waits for the writer's first pipeline (on a loaded machine the
        # writer could otherwise start after a short iteration had ended).
        cursor, keys = c.scan(0, count=count)
        seen = set(keys)
        deadline = time.monotonic() + 60
        while written[0] == 0 and not errors and time.monotonic() < deadline:
            time.sleep(0.001)
        while cursor != 0:
            cursor, keys = c.scan(cursor, count=count)
            seen.update(keys)
        during = written[0]
    finally:
        stop.set()
        t.join(timeout=120)
    assert not errors, errors
    missing = stable - seen
    assert not missing, f"{len(missing)} stable keys never returned (e.g. {sorted(missing)[:3]})"
    assert all(k.startswith(("stable:", "doomed:", "new:")) for k in seen)
    assert during > 0, "the writer wrote nothing during the iteration"
