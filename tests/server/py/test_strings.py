"""String and keyspace commands against a real kvcg-server, compared with
what Redis 7 answers for the same calls."""
import pytest
import redis


def test_get_set_basic(r):
    assert r.get("k") is None
    assert r.set("k", "v") is True
    assert r.get("k") == "v"
    assert r.set("k", "w") is True
    assert r.get("k") == "w"


def test_binary_safe_keys_and_values(server):
    c = server.client()
    key = b"a\x00b\r\n\xff"
    val = bytes(range(256)) * 3
    assert c.set(key, val)
    assert c.get(key) == val
    assert c.strlen(key) == len(val)
    assert c.get(b"a\x00b\r\n") is None  # a prefix is a different key
    c.delete(key)


def test_set_nx_xx_get(r):
    assert r.set("k", "1", xx=True) is None
    assert r.get("k") is None
    assert r.set("k", "1", nx=True) is True
    assert r.set("k", "2", nx=True) is None
    assert r.get("k") == "1"
    assert r.set("k", "3", xx=True) is True
    assert r.get("k") == "3"
    assert r.set("k", "4", get=True) == "3"
    assert r.set("new", "x", get=True) is None
    assert r.get("new") == "x"
    assert r.set("k", "5", xx=True, get=True) == "4"
    assert r.set("absent", "5", xx=True, get=True) is None
    assert r.exists("absent") == 0
    assert r.set("k", "6", nx=True, get=True) == "5"
    assert r.get("k") == "5"


def test_set_syntax_and_expiry_errors(r):
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("SET", "k", "v", "NX", "XX")
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("SET", "k", "v", "BOGUS")
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("SET", "k", "v", "EX")
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("SET", "k", "v", "EX", "10", "KEEPTTL")
    with pytest.raises(redis.ResponseError, match="invalid expire time in 'set' command"):
        r.execute_command("SET", "k", "v", "EX", "0")
    assert r.get("k") is None  # nothing was stored (expiry options: test_expiry.py)


def test_setnx_getset_getdel(r):
    assert r.setnx("k", "a") is True
    assert r.setnx("k", "b") is False
    assert r.getset("k", "c") == "a"
    assert r.getset("other", "x") is None
    assert r.getdel("k") == "c"
    assert r.getdel("k") is None
    assert r.exists("k") == 0


def test_mget_mset(r):
    assert r.mset({"a": "1", "b": "2", "c": "3"}) is True
    assert r.mget("a", "b", "nope", "c") == ["1", "2", None, "3"]
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'mset' command"):
        r.execute_command("MSET", "a", "1", "b")


def test_del_unlink_exists(r):
    r.mset({"a": "1", "b": "2", "c": "3"})
    assert r.exists("a", "a", "b", "zz") == 3  # repeated keys count repeatedly
    assert r.delete("a", "zz") == 1
    assert r.unlink("b", "c", "b") == 2
    assert r.exists("a", "b", "c") == 0
    assert r.dbsize() == 0


def test_strlen_append(r):
    assert r.strlen("k") == 0
    assert r.append("k", "abc") == 3
    assert r.append("k", "de") == 5
    assert r.get("k") == "abcde"
    assert r.strlen("k") == 5


def test_incr_family(r):
    assert r.incr("n") == 1
    assert r.incrby("n", 10) == 11
    assert r.decr("n") == 10
    assert r.decrby("n", 20) == -10
    assert r.get("n") == "-10"
    r.set("n", str(2**63 - 1))
    with pytest.raises(redis.ResponseError, match="increment or decrement would overflow"):
        r.incr("n")
    r.set("n", str(-(2**63)))
    with pytest.raises(redis.ResponseError, match="increment or decrement would overflow"):
        r.decr("n")
    with pytest.raises(redis.ResponseError, match="decrement would overflow"):
        r.execute_command("DECRBY", "m", str(-(2**63)))
    for bad in ("abc", " 1", "1 ", "01", "+1", "1.5", ""):
        r.set("s", bad)
        with pytest.raises(redis.ResponseError, match="value is not an integer or out of range"):
            r.incr("s")
        assert r.get("s") == bad
    with pytest.raises(redis.ResponseError, match="value is not an integer or out of range"):
        r.execute_command("INCRBY", "n", "x")


def test_incrbyfloat(r):
    # redis-py converts the reply to float; check the exact text with GET.
    assert r.execute_command("INCRBYFLOAT", "f", "10.5") == 10.5
    assert r.execute_command("INCRBYFLOAT", "f", "0.1") == 10.6
    assert r.execute_command("INCRBYFLOAT", "f", "-5") == 5.6
    assert r.get("f") == "5.6"
    r.set("g", "5.0e3")
    assert r.execute_command("INCRBYFLOAT", "g", "2.0e2") == 5200
    assert r.get("g") == "5200"
    r.set("h", "3")
    assert r.execute_command("INCRBYFLOAT", "h", "1.5") == 4.5
    with pytest.raises(redis.ResponseError, match="value is not a valid float"):
        r.execute_command("INCRBYFLOAT", "h", "abc")
    r.set("s", "abc")
    with pytest.raises(redis.ResponseError, match="value is not a valid float"):
        r.execute_command("INCRBYFLOAT", "s", "1")
    with pytest.raises(redis.ResponseError, match="NaN or Infinity"):
        r.execute_command("INCRBYFLOAT", "h", "inf")


def test_flush_and_dbsize(r):
    r.mset({f"k{i}": i for i in range(100)})
    assert r.dbsize() == 100
    assert r.flushdb() is True
    assert r.dbsize() == 0
    r.set("x", 1)
    assert r.execute_command("FLUSHALL", "ASYNC") is True
    assert r.dbsize() == 0
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("FLUSHALL", "LATER")


def test_unknown_command_and_arity(r):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("FOO", "a", "b")
    assert str(e.value) == "unknown command 'FOO', with args beginning with: 'a' 'b' "
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("HSET", "h", "f", "x")
    assert str(e.value).startswith("unknown command 'HSET'")
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("GET")
    assert str(e.value) == "wrong number of arguments for 'get' command"
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("GET", "a", "b")
    assert str(e.value) == "wrong number of arguments for 'get' command"


def test_large_value(r):
    val = "x" * (3 * 1024 * 1024)
    assert r.set("big", val)
    assert r.get("big") == val
    assert r.append("big", "yz") == len(val) + 2
