"""The rest of Redis 7.0's string family against a real kvcg-server: SETRANGE,
GETRANGE/SUBSTR, MSETNX, LCS, and the edges of INCRBYFLOAT and GETDEL.

Expected values are Redis 7.0's: the examples of the redis.io command pages,
and edge cases whose answers were taken from redis-server 7.0.15 (the same
calls, run once by hand; the tests assert the fixed values)."""
import threading

import pytest

from conftest import err

ERR_INT = "value is not an integer or out of range"
ERR_FLOAT = "value is not a valid float"
ERR_NAN = "increment would produce NaN or Infinity"
ERR_TOO_BIG = "string exceeds maximum allowed size (proto-max-bulk-len)"


# --- SETRANGE

def test_setrange_docs_example(b):
    b.set("key1", "Hello World")
    assert b.setrange("key1", 6, "Redis") == 11
    assert b.get("key1") == b"Hello Redis"
    assert b.setrange("key2", 6, "Redis") == 11
    assert b.get("key2") == b"\x00" * 6 + b"Redis"


def test_setrange_in_place_and_growing(b):
    b.set("k", "foo")
    assert b.setrange("k", 0, "b") == 3
    assert b.get("k") == b"boo"
    assert b.setrange("k", 1, "ar") == 3  # same bytes: nothing to write
    assert b.get("k") == b"bar"
    assert b.setrange("k", 5, "!") == 6
    assert b.get("k") == b"bar\x00\x00!"
    b.set("n", 1234)  # an integer-looking value is a string like any other
    assert b.setrange("n", 1, "x") == 4
    assert b.get("n") == b"1x34"


def test_setrange_empty_value_writes_nothing(b):
    assert b.setrange("missing", 5, "") == 0
    assert b.exists("missing") == 0
    assert b.setrange("missing", 536870912, "") == 0  # no size check when nothing is written
    b.set("k", "foobar")
    assert b.setrange("k", 3, "") == 6
    assert b.setrange("k", 536870912, "") == 6
    assert b.get("k") == b"foobar"


def test_setrange_errors(b):
    assert err(b, "SETRANGE", "k", -1, "x") == "offset is out of range"
    assert err(b, "SETRANGE", "k", -1, "") == "offset is out of range"
    assert err(b, "SETRANGE", "k", "a", "x") == ERR_INT
    assert err(b, "SETRANGE", "k", 536870912, "a") == ERR_TOO_BIG
    assert err(b, "SETRANGE", "k", 536870911, "ab") == ERR_TOO_BIG
    b.set("k", "x")
    assert err(b, "SETRANGE", "k", 9223372036854775807, "A") == ERR_TOO_BIG  # offset + len overflows
    assert err(b, "SETRANGE", "k", 1) == "wrong number of arguments for 'setrange' command"
    assert b.get("k") == b"x"


def test_setrange_far_offset_reads_first(b):
    # Over 64 KiB the handler reads the key before building the value.
    assert b.setrange("big", 200000, "hello") == 200005
    assert b.getrange("big", 199999, -1) == b"\x00hello"
    assert b.setrange("big", 100, "abc") == 200005
    assert b.getrange("big", 99, 103) == b"\x00abc\x00"
    assert b.setrange("big", 200003, "xyzw") == 200007
    assert b.getrange("big", 199998, -1) == b"\x00\x00helxyzw"


def test_setrange_limit_follows_proto_max_bulk_len(b, small_bulk_len):
    assert b.setrange("y", small_bulk_len - 1, "a") == small_bulk_len
    assert err(b, "SETRANGE", "y", small_bulk_len, "a") == ERR_TOO_BIG
    assert err(b, "SETRANGE", "fresh", small_bulk_len - 1, "ab") == ERR_TOO_BIG
    assert b.exists("fresh") == 0
    assert err(b, "APPEND", "y", "b") == ERR_TOO_BIG


def test_setrange_concurrent_clients_lose_no_write(server):
    """SETRANGE is a compare-and-swap loop: racing writers to disjoint ranges of one key all land."""
    c = server.client()
    c.delete("shared")
    threads, per = 4, 100

    def work(t):
        cl = server.client()
        pipe = cl.pipeline(transaction=False)
        for i in range(per):
            pipe.setrange("shared", (i * threads + t) * 2, b"%c%c" % (65 + t, 48 + i % 10))
        pipe.execute()
        cl.close()

    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    value = c.get("shared")
    assert len(value) == threads * per * 2
    for slot in range(threads * per):
        t, i = slot % threads, slot // threads
        assert value[slot * 2:slot * 2 + 2] == b"%c%c" % (65 + t, 48 + i % 10)
    c.delete("shared")


def test_setrange_makes_a_float_invalid(b):
    # Redis's unit/type/incr "string to double with null terminator".
    b.set("foo", 1)
    assert b.setrange("foo", 2, 2) == 3
    assert b.get("foo") == b"1\x002"
    assert err(b, "INCRBYFLOAT", "foo", 1) == ERR_FLOAT


# --- GETRANGE / SUBSTR

@pytest.mark.parametrize("cmd", ["GETRANGE", "SUBSTR"])
def test_getrange_docs_example(b, cmd):
    b.set("mykey", "This is a string")
    assert b.execute_command(cmd, "mykey", 0, 3) == b"This"
    assert b.execute_command(cmd, "mykey", -3, -1) == b"ing"
    assert b.execute_command(cmd, "mykey", 0, -1) == b"This is a string"
    assert b.execute_command(cmd, "mykey", 10, 100) == b"string"


def test_getrange_edges(b):
    assert b.getrange("missing", 0, -1) == b""
    b.set("k", "foobar")
    assert b.getrange("k", -1, -5) == b""
    assert b.getrange("k", 10, 20) == b""
    assert b.getrange("k", -100, -99) == b"f"
    assert b.getrange("k", -100, -5) == b"fo"
    assert b.getrange("k", 3, 2) == b""
    assert b.getrange("k", 0, 4294967297) == b"foobar"  # Redis issue #1844
    assert b.getrange("k", -9223372036854775808, 9223372036854775807) == b"foobar"
    b.set("n", 1234)
    assert b.getrange("n", 0, 2) == b"123"
    b.set("e", "")
    assert b.getrange("e", 0, -1) == b""


def test_getrange_errors(b):
    assert err(b, "GETRANGE", "missing", "a", 1) == ERR_INT  # checked before the key is read
    b.set("k", "foobar")
    assert err(b, "GETRANGE", "k", 0, "99999999999999999999") == ERR_INT
    assert err(b, "SUBSTR", "k", "1.5", 2) == ERR_INT
    assert err(b, "GETRANGE", "k", 0) == "wrong number of arguments for 'getrange' command"


# --- MSETNX

def test_msetnx_docs_example(b):
    assert b.msetnx({"key1": "Hello", "key2": "there"}) is True
    assert b.msetnx({"key2": "new", "key3": "world"}) is False
    assert b.mget("key1", "key2", "key3") == [b"Hello", b"there", None]


def test_msetnx_repeated_key(b):
    # From Redis's unit/type/string: the last value of a repeated key wins.
    assert b.execute_command("MSETNX", "x1", "xxx", "y2", "yyy") == 1
    assert b.mget("x1", "y2") == [b"xxx", b"yyy"]
    b.flushall()
    assert b.execute_command("MSETNX", "x1", "xxx", "x1", "yyy") == 1
    assert b.get("x1") == b"yyy"
    assert b.execute_command("MSETNX", "x1", "aaa", "x1", "zzz") == 0
    assert b.get("x1") == b"yyy"


def test_msetnx_nothing_written_when_one_exists(b):
    b.set("x", "old")
    assert b.execute_command("MSETNX", "a", "1", "x", "2", "b", "3") == 0
    assert b.mget("a", "x", "b") == [None, b"old", None]


def test_msetnx_many_keys(b):
    pairs = []
    for i in range(40):
        pairs += [f"k{i}", f"v{i}"]
    pairs += ["k0", "last"]  # repeated key beyond the small-count path
    assert b.execute_command("MSETNX", *pairs) == 1
    assert b.get("k0") == b"last"
    assert b.get("k39") == b"v39"
    assert b.dbsize() == 40
    assert b.execute_command("MSETNX", "new", "1", "k20", "x") == 0
    assert b.exists("new") == 0


def test_msetnx_errors(b):
    assert err(b, "MSETNX", "a") == "wrong number of arguments for 'msetnx' command"
    assert err(b, "MSETNX", "a", "1", "b") == "wrong number of arguments for 'msetnx' command"
    assert b.exists("a") == 0


def test_msetnx_in_a_pipeline_keeps_order(b):
    pipe = b.pipeline(transaction=False)
    pipe.set("x", "1")
    pipe.msetnx({"x": "2", "y": "3"})
    pipe.msetnx({"p": "1", "q": "2"})
    pipe.get("p")
    pipe.set("q", "overwritten")
    pipe.get("q")
    assert pipe.execute() == [True, False, True, b"1", True, b"overwritten"]
    assert b.exists("y") == 0


def test_msetnx_racing_clients_at_most_one_wins(server):
    """Clients race MSETNX on the same keys in opposite orders: never two winners; the
    winner's values are all in place, and without a winner every created key was undone."""
    threads, rounds = 4, 30
    c = server.client()
    for rnd in range(rounds):
        c.delete("a", "b", "c")
        barrier = threading.Barrier(threads)
        replies = [None] * threads

        def work(t):
            cl = server.client()
            keys = ["a", "b", "c"] if t % 2 == 0 else ["c", "b", "a"]
            args = []
            for k in keys:
                args += [k, f"t{t}"]
            barrier.wait()
            replies[t] = cl.execute_command("MSETNX", *args)
            cl.close()

        ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        winners = [t for t in range(threads) if replies[t] == 1]
        assert len(winners) <= 1, (rnd, replies)
        values = c.mget("a", "b", "c")
        if winners:
            assert values == [f"t{winners[0]}".encode()] * 3, (rnd, replies, values)
        else:
            assert values == [None, None, None], (rnd, replies, values)
    c.delete("a", "b", "c")


def test_msetnx_against_plain_writers(server):
    """A writer SETs and DELs the keys MSETNX wants while it runs. Whatever the interleaving:
    after MSETNX answers 0 none of its values is left behind (a created key is undone), and
    the writer reading right after its own SET sees its value or, while an undo restores it,
    nothing — never an MSETNX value, which is never written over an existing one (only the
    writer deletes, so a key is absent only after the writer's own DEL)."""
    stop = threading.Event()
    failures = []

    def writer():
        c = server.client()
        for i in range(400):
            v = b"w%d" % i
            p = c.pipeline(transaction=False)
            p.set("z", v)
            p.set("x", v)
            p.get("x")
            p.delete("x")
            p.delete("z")
            got = p.execute()[2]
            if got not in (v, None):
                failures.append(("writer read", v, got))
        stop.set()
        c.close()

    def msetnx():
        c = server.client()
        i = 0
        while not stop.is_set():
            i += 1
            mine = b"m%d" % i  # distinct per call: an earlier win's values may still be there
            if c.execute_command("MSETNX", "x", mine, "z", mine) == 0:
                left = c.mget("x", "z")
                if mine in left:
                    failures.append(("left behind", mine, left))
        c.close()

    ts = [threading.Thread(target=writer), threading.Thread(target=msetnx)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert failures == []


# --- LCS

def test_lcs_docs_example(b):
    b.mset({"key1": "ohmytext", "key2": "mynewtext"})
    assert b.lcs("key1", "key2") == b"mytext"
    assert b.lcs("key1", "key2", len=True) == 6
    assert b.execute_command("LCS", "key1", "key2", "IDX") == [
        b"matches", [[[4, 7], [5, 8]], [[2, 3], [0, 1]]], b"len", 6]
    assert b.execute_command("LCS", "key1", "key2", "IDX", "MINMATCHLEN", 4) == [
        b"matches", [[[4, 7], [5, 8]]], b"len", 6]
    assert b.execute_command("LCS", "key1", "key2", "IDX", "MINMATCHLEN", 4, "WITHMATCHLEN") == [
        b"matches", [[[4, 7], [5, 8], 4]], b"len", 6]
    assert b.execute_command("LCS", "key1", "key2", "IDX", "WITHMATCHLEN", "MINMATCHLEN", 2) == [
        b"matches", [[[4, 7], [5, 8], 4], [[2, 3], [0, 1], 2]], b"len", 6]


def test_lcs_redis_suite_strings(b):
    # Redis's unit/type/string "LCS basic" strings (RNA of two viruses, shortened).
    rna1 = "CACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAGATCTGTTCTCTAAACGAAC"
    rna2 = "ATTAAAGGTTTATACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAGATCTG"
    b.mset({"v1": rna1, "v2": rna2})
    assert b.lcs("v1", "v2") == b"ACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAGATCTG"
    assert b.lcs("v1", "v2", len=True) == 48
    assert b.execute_command("LCS", "v1", "v2", "IDX", "MINMATCHLEN", 10, "WITHMATCHLEN") == [
        b"matches", [[[1, 44], [13, 56], 44]], b"len", 48]


def test_lcs_missing_keys_and_options(b):
    assert b.lcs("nokey1", "nokey2") == b""
    assert b.execute_command("LCS", "nokey1", "nokey2", "IDX") == [b"matches", [], b"len", 0]
    b.set("k", "foobar")
    assert b.lcs("k", "missing") == b""
    assert b.execute_command("LCS", "k", "k", "idx", "idx") == [b"matches", [[[0, 5], [0, 5]]], b"len", 6]
    assert b.execute_command("LCS", "k", "k", "IDX", "MINMATCHLEN", -5, "WITHMATCHLEN") == [
        b"matches", [[[0, 5], [0, 5], 6]], b"len", 6]
    assert b.execute_command("LCS", "k", "k", "LEN", "WITHMATCHLEN") == 6
    assert b.execute_command("LCS", "k", "k", "LEN", "MINMATCHLEN", 3) == 6


def test_lcs_resp3_map(server):
    c = server.client(protocol=3)
    c.mset({"key1": "ohmytext", "key2": "mynewtext"})
    assert c.execute_command("LCS", "key1", "key2", "IDX") == {
        b"matches": [[[4, 7], [5, 8]], [[2, 3], [0, 1]]], b"len": 6}
    c.delete("key1", "key2")
    c.close()


def test_lcs_errors(b, small_bulk_len):
    b.set("k", "foobar")
    assert err(b, "LCS", "k", "k", "LEN", "IDX") == "If you want both the length and indexes, please just use IDX."
    assert err(b, "LCS", "k", "k", "MINMATCHLEN") == "syntax error"
    assert err(b, "LCS", "k", "k", "MINMATCHLEN", "x") == ERR_INT
    assert err(b, "LCS", "k", "k", "foo") == "syntax error"
    assert err(b, "LCS", "k") == "wrong number of arguments for 'lcs' command"
    # The table is (len1 + 1) * (len2 + 1) 32-bit cells, at most proto-max-bulk-len bytes.
    b.set("a", "x" * 600)
    b.set("c", "y" * 600)
    assert err(b, "LCS", "a", "c") == "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
    assert b.lcs("a", "k", len=True) == 0


# --- INCRBYFLOAT edges

def incrbyfloat_text(client, key, increment):
    """INCRBYFLOAT's reply as the server wrote it (redis-py turns it into a float): the
    reply is the stored value, so read that back."""
    client.execute_command("INCRBYFLOAT", key, increment)
    return client.get(key)


def test_incrbyfloat_number_formats(b):
    assert incrbyfloat_text(b, "a", "0x10") == b"16"  # strtold accepts hex
    assert incrbyfloat_text(b, "b", "-0.0") == b"0"
    assert incrbyfloat_text(b, "c", "1.5e+2") == b"150"
    assert incrbyfloat_text(b, "c", "-150") == b"0"
    assert incrbyfloat_text(b, "d", "5e-18") == b"0"  # below %.17Lf
    assert incrbyfloat_text(b, "e", "0.1") == b"0.1"
    assert incrbyfloat_text(b, "e", "0.2") == b"0.3"
    big = incrbyfloat_text(b, "f", "1e400")  # long double range
    assert len(big) == 401 and big.startswith(b"10000000000000000000281880683947586514586")
    # Up to 5119 bytes is a number, 5120 is not (Redis's MAX_LONG_DOUBLE_CHARS).
    b.set("g", "0" * 5118 + "1")
    assert incrbyfloat_text(b, "g", 1) == b"2"
    b.set("h", "0" * 5119 + "1")
    assert err(b, "INCRBYFLOAT", "h", 1) == ERR_FLOAT


def test_incrbyfloat_invalid_numbers(b):
    for bad in ("nan", " 1", "1 ", "1e5000", "1e-5000", "", "abc", "1.5.5"):
        assert err(b, "INCRBYFLOAT", "k", bad) == ERR_FLOAT, bad
    assert b.exists("k") == 0
    b.set("s", "abc")
    assert err(b, "INCRBYFLOAT", "s", "1") == ERR_FLOAT
    assert err(b, "INCRBYFLOAT", "s", "inf") == ERR_FLOAT  # the value is checked first, as Redis
    b.set("z", b"\x00\x00")
    assert err(b, "INCRBYFLOAT", "z", "1") == ERR_FLOAT
    b.set("e", "")
    assert err(b, "INCRBYFLOAT", "e", "1") == ERR_FLOAT


def test_incrbyfloat_nan_or_infinity(b):
    assert err(b, "INCRBYFLOAT", "k", "inf") == ERR_NAN
    assert err(b, "INCRBYFLOAT", "k", "-inf") == ERR_NAN
    assert b.exists("k") == 0  # nothing stored for a missing key
    b.set("big", "1.18e4932")
    assert err(b, "INCRBYFLOAT", "big", "1.18e4932") == ERR_NAN  # overflow
    assert b.get("big") == b"1.18e4932"
    b.set("inf", "inf")
    assert err(b, "INCRBYFLOAT", "inf", 1) == ERR_NAN
    b.set("x", 5)
    assert err(b, "INCRBYFLOAT", "x", "-inf") == ERR_NAN
    assert b.get("x") == b"5"


# --- GETDEL

def test_getdel_edges(b):
    assert b.getdel("missing") is None
    b.set("k", b"\x00bin\xff")
    pipe = b.pipeline(transaction=False)
    pipe.getdel("k")
    pipe.get("k")
    pipe.set("k", "again")
    pipe.getdel("k")
    pipe.exists("k")
    assert pipe.execute() == [b"\x00bin\xff", None, True, b"again", 0]
    assert err(b, "GETDEL", "a", "b") == "wrong number of arguments for 'getdel' command"


def test_string_commands_in_command_table(b):
    info = b.execute_command("COMMAND", "INFO", "setrange", "getrange", "substr", "msetnx", "lcs")  # redis-py makes it {name: {arity, ...}}
    shapes = {name: (x["arity"], x["first_key_pos"], x["last_key_pos"], x["step_count"]) for name, x in info.items()}
    assert shapes == {"setrange": (4, 1, 1, 1), "getrange": (4, 1, 1, 1), "substr": (4, 1, 1, 1),
                      "msetnx": (-3, 1, -1, 2), "lcs": (-3, 1, 2, 1)}
