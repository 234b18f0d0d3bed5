"""Lists and sets (src/server/collections.h, cmd_collections.cc) and the type
rules of the string commands (cmd_types.h): replies and errors as Redis 7.0,
WRONGTYPE both ways, and the keyspace commands seeing both kinds of key."""
import pytest
import redis

from conftest import ServerProcess

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def wrongtype(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    assert str(e.value) == WRONGTYPE


def error(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


# --- lists

def test_push_pop_range(r):
    assert r.rpush("l", "a", "b", "c") == 3
    assert r.lpush("l", "y", "z") == 5  # each element at the head in turn
    assert r.lrange("l", 0, -1) == ["z", "y", "a", "b", "c"]
    assert r.llen("l") == 5
    assert r.lrange("l", 1, 2) == ["y", "a"]
    assert r.lrange("l", -2, 100) == ["b", "c"]
    assert r.lrange("l", -100, 0) == ["z"]
    assert r.lrange("l", 3, 1) == []
    assert r.lrange("l", 5, 10) == []
    assert r.lpop("l") == "z"
    assert r.rpop("l") == "c"
    assert r.lrange("l", 0, -1) == ["y", "a", "b"]


def test_pop_count_redis7(r):
    r.rpush("l", "a", "b", "c", "d")
    assert r.lpop("l", 2) == ["a", "b"]
    assert r.rpop("l", 1) == ["d"]
    assert r.lpop("l", 0) == []
    assert r.rpop("l", 10) == ["c"]  # more than it holds: all, and the list is deleted
    assert r.exists("l") == 0
    assert r.lpop("l") is None
    assert r.execute_command("LPOP", "l", 2) is None  # a null array for a missing key with a count
    assert r.execute_command("LPOP", "l", 0) is None
    assert error(r.execute_command, "LPOP", "l", -1) == "value is out of range, must be positive"
    assert error(r.execute_command, "RPOP", "l", "x") == "value is out of range, must be positive"
    assert error(r.execute_command, "LPOP", "l", 1, 2) == "wrong number of arguments for 'lpop' command"


def test_emptied_list_is_deleted(r):
    r.rpush("l", "a")
    assert r.rpop("l") == "a"
    assert r.exists("l") == 0
    assert r.type("l") == "none"
    assert r.dbsize() == 0


def test_list_missing_and_errors(r):
    assert r.llen("nope") == 0
    assert r.lrange("nope", 0, -1) == []
    assert r.rpop("nope") is None
    assert error(r.execute_command, "LRANGE", "l", "a", 1) == "value is not an integer or out of range"
    assert error(r.execute_command, "LRANGE", "l", 0, "1.5") == "value is not an integer or out of range"
    assert error(r.execute_command, "LPUSH", "l") == "wrong number of arguments for 'lpush' command"
    assert error(r.execute_command, "LLEN") == "wrong number of arguments for 'llen' command"


# --- sets

def test_set_commands(r):
    assert r.sadd("s", "a", "b", "a") == 2
    assert r.sadd("s", "b", "c") == 1
    assert r.smembers("s") == {"a", "b", "c"}
    assert r.scard("s") == 3
    assert r.sismember("s", "a") == 1
    assert r.sismember("s", "zz") == 0
    assert r.srem("s", "a", "zz") == 1
    assert r.smembers("s") == {"b", "c"}
    assert r.srem("s", "b", "c") == 2
    assert r.exists("s") == 0  # emptied: deleted
    assert r.smembers("s") == set()
    assert r.scard("s") == 0
    assert r.sismember("s", "a") == 0
    assert r.srem("s", "a") == 0
    assert error(r.execute_command, "SADD", "s") == "wrong number of arguments for 'sadd' command"
    assert error(r.execute_command, "SISMEMBER", "s") == "wrong number of arguments for 'sismember' command"


def test_smembers_resp3(server):
    c = server.client(decode_responses=True, protocol=3)
    try:
        c.flushall()
        c.sadd("s", "x", "y")
        assert c.smembers("s") == {"x", "y"}
    finally:
        c.close()


def test_list_and_set_commands_on_each_other(r):
    r.rpush("l", "a")
    r.sadd("s", "a")
    for fn, args in [(r.sadd, ("l", "x")), (r.srem, ("l", "a")), (r.scard, ("l",)), (r.smembers, ("l",)),
                     (r.sismember, ("l", "a")), (r.lpush, ("s", "x")), (r.rpush, ("s", "x")),
                     (r.lpop, ("s",)), (r.rpop, ("s",)), (r.llen, ("s",)), (r.lrange, ("s", 0, -1))]:
        wrongtype(fn, *args)
    assert r.lrange("l", 0, -1) == ["a"] and r.smembers("s") == {"a"}


def test_string_key_answers_wrongtype_to_list_and_set_commands(r):
    r.set("k", "v")
    for fn, args in [(r.lpush, ("k", "x")), (r.rpush, ("k", "x")), (r.lpop, ("k",)), (r.rpop, ("k",)),
                     (r.llen, ("k",)), (r.lrange, ("k", 0, -1)), (r.sadd, ("k", "x")), (r.srem, ("k", "x")),
                     (r.scard, ("k",)), (r.smembers, ("k",)), (r.sismember, ("k", "x"))]:
        wrongtype(fn, *args)
    assert r.get("k") == "v"
    assert r.type("k") == "string"
    assert r.dbsize() == 1


def test_pipeline_orders_collection_and_string_commands(r):
    # LPUSH of a new key waits on a store check: the connection holds its later
    # commands on the key back, so they see the list (as in Redis).
    p = r.pipeline(transaction=False)
    p.rpush("k", "a")
    p.get("k")
    p.set("j", "v")
    p.sadd("j", "x")
    p.rpush("k", "b")
    p.lrange("k", 0, -1)
    out = p.execute(raise_on_error=False)
    assert out[0] == 1
    assert isinstance(out[1], redis.ResponseError) and str(out[1]) == WRONGTYPE
    assert out[2] is True
    assert isinstance(out[3], redis.ResponseError) and str(out[3]) == WRONGTYPE
    assert out[4] == 2 and out[5] == ["a", "b"]


# --- string commands on a list or set

STRING_READS = [
    ("GET",), ("STRLEN",), ("GETRANGE", 0, -1), ("SUBSTR", 0, -1), ("GETBIT", 0), ("BITCOUNT",),
    ("BITPOS", 1), ("GETEX",), ("GETEX", "PERSIST"), ("GETDEL",), ("GETSET", "v"),
]
STRING_RMW = [
    ("INCR",), ("DECR",), ("INCRBY", 2), ("DECRBY", 2), ("INCRBYFLOAT", "1.5"), ("APPEND", "x"),
    ("SETRANGE", 0, "x"), ("SETRANGE", 1, ""), ("SETBIT", 0, 1), ("SET", "v", "GET"), ("SET", "v", "NX", "GET"),
]


@pytest.mark.parametrize("kind", ["list", "set"])
@pytest.mark.parametrize("cmd", STRING_READS + STRING_RMW, ids=lambda c: " ".join(map(str, c)))
def test_string_commands_answer_wrongtype_and_change_nothing(r, kind, cmd):
    if kind == "list":
        r.rpush("k", "1")
    else:
        r.sadd("k", "1")
    wrongtype(r.execute_command, cmd[0], "k", *cmd[1:])
    assert r.type("k") == kind
    assert (r.lrange("k", 0, -1) if kind == "list" else sorted(r.smembers("k"))) == ["1"]


def test_argument_errors_come_before_wrongtype(r):
    r.rpush("k", "1")
    assert error(r.execute_command, "INCRBY", "k", "x") == "value is not an integer or out of range"
    assert error(r.execute_command, "SETRANGE", "k", -1, "x") == "offset is out of range"
    assert error(r.execute_command, "SETBIT", "k", 0, 2) == "bit is not an integer or out of range"
    assert error(r.execute_command, "SET", "k", "v", "NX", "XX") == "syntax error"


def test_lcs_on_a_list(r):
    r.rpush("k", "1")
    r.set("s", "abc")
    assert error(r.execute_command, "LCS", "k", "s") == "The specified keys must hold string values"
    assert error(r.execute_command, "LCS", "s", "k", "LEN") == "The specified keys must hold string values"


def test_mget_returns_nil_for_a_list_or_set(r):
    r.set("a", "A")
    r.rpush("l", "x")
    r.sadd("s", "y")
    assert r.mget("a", "l", "missing", "s") == ["A", None, None, None]


def test_set_and_other_overwrites_replace_a_collection(r):
    r.rpush("k1", "x")
    assert r.set("k1", "v") is True
    assert r.type("k1") == "string" and r.get("k1") == "v"
    r.sadd("k2", "x")
    assert r.set("k2", "v", xx=True) is True  # XX: the key exists (as a set)
    assert r.get("k2") == "v"
    r.rpush("k3", "x")
    assert r.setex("k3", 100, "v") is True
    assert r.get("k3") == "v" and 0 < r.ttl("k3") <= 100
    r.rpush("k4", "x")
    assert r.psetex("k4", 100000, "v") is True
    assert r.get("k4") == "v"
    r.rpush("k5", "x")
    r.sadd("k6", "x")
    assert r.mset({"k5": "v5", "k6": "v6"}) is True
    assert r.mget("k5", "k6") == ["v5", "v6"]
    assert r.type("k5") == "string" and r.type("k6") == "string"
    assert r.dbsize() == 6
    wrongtype(r.lpush, "k1", "again")  # a string now


def test_conditional_writes_see_a_collection_as_existing(r):
    r.rpush("l", "x")
    assert r.set("l", "v", nx=True) is None
    assert r.setnx("l", "v") is False
    assert r.msetnx({"new": "1", "l": "2"}) is False
    assert r.exists("new") == 0
    assert r.lrange("l", 0, -1) == ["x"]


# --- keyspace commands

def test_keyspace_commands_see_collections(r):
    r.set("str", "v")
    r.rpush("list", "a", "b")
    r.sadd("set", "m")
    assert r.type("list") == "list" and r.type("set") == "set" and r.type("str") == "string"
    assert r.exists("list", "set", "str", "nope", "list") == 4
    assert r.touch("list", "set", "nope") == 2
    assert r.dbsize() == 3
    assert sorted(r.keys("*")) == ["list", "set", "str"]
    assert sorted(r.keys("l*")) == ["list"]
    assert r.ttl("list") == -1 and r.pttl("set") == -1
    assert r.persist("list") is False
    assert r.object("encoding", "list") == "quicklist"
    assert r.object("encoding", "set") == "hashtable"
    assert r.memory_usage("list") > 0
    assert r.info("keyspace")["db0"]["keys"] == 3
    seen = {r.randomkey() for _ in range(60)}
    assert seen == {"list", "set", "str"}
    assert r.delete("list", "set", "str", "nope") == 3
    assert r.dbsize() == 0
    assert r.exists("list") == 0 and r.type("set") == "none"


def test_unlink_and_flushall(r):
    r.rpush("l", "a")
    r.sadd("s", "a")
    assert r.unlink("l") == 1
    assert r.exists("l") == 0
    r.rpush("l", "a")
    r.set("x", "1")
    assert r.flushall() is True
    assert r.dbsize() == 0
    assert r.keys("*") == []
    assert r.llen("l") == 0 and r.scard("s") == 0


def scan_all(r, **kw):
    keys, cursor = [], 0
    while True:
        cursor, batch = r.scan(cursor, **kw)
        keys += batch
        if cursor == 0:
            return keys


def test_scan_sees_collections_and_filters_type(r):
    strings = {f"s:{i}" for i in range(50)}
    r.mset({k: "v" for k in strings})
    r.rpush("l:1", "a")
    r.rpush("l:2", "a")
    r.sadd("set:1", "a")
    got = scan_all(r, count=7)
    assert set(got) == strings | {"l:1", "l:2", "set:1"}
    assert sorted(k for k in got if not k.startswith("s:")) == ["l:1", "l:2", "set:1"]  # once each
    assert sorted(scan_all(r, _type="list")) == ["l:1", "l:2"]
    assert sorted(scan_all(r, _type="SET")) == ["set:1"]
    assert set(scan_all(r, _type="string")) == strings
    assert sorted(scan_all(r, match="l:*")) == ["l:1", "l:2"]
    assert scan_all(r, _type="hash") == []


def test_rename_copy_and_expire_of_a_collection(r):
    r.rpush("l", "a")
    msg = "kvcg: RENAME, RENAMENX and COPY do not move lists or sets"
    assert error(r.rename, "l", "m") == msg
    assert error(r.renamenx, "l", "m") == msg
    assert error(r.copy, "l", "m") == msg
    assert error(r.expire, "l", 10) == "kvcg: lists and sets do not take a TTL"
    assert error(r.pexpireat, "l", 1) == "kvcg: lists and sets do not take a TTL"
    assert r.lrange("l", 0, -1) == ["a"] and r.ttl("l") == -1
    # As a destination: RENAME and COPY REPLACE replace it, RENAMENX and COPY find it.
    r.set("src", "v")
    assert r.renamenx("src", "l") is False
    assert r.copy("src", "l") is False
    assert r.type("l") == "list"
    assert r.copy("src", "l", replace=True) is True
    assert r.type("l") == "string" and r.get("l") == "v"
    r.sadd("dst", "x")
    assert r.rename("src", "dst") is True
    assert r.get("dst") == "v" and r.exists("src") == 0
    # A missing source leaves a collection destination alone.
    r.sadd("d2", "x")
    assert error(r.rename, "nope", "d2") == "no such key"
    assert r.type("d2") == "set"


def test_string_commands_unaffected_after_collections_are_gone(r):
    r.rpush("l", "a")
    r.delete("l")
    assert r.incr("l") == 1
    assert r.append("l", "x") == 2
    assert r.get("l") == "1x"


def test_lists_and_sets_are_not_saved(server_binary, tmp_path):
    """Documented: collections live in server memory only; SAVE writes the strings."""
    srv = ServerProcess(server_binary, ["--dir", str(tmp_path), "--save", ""])
    c = srv.client(decode_responses=True)
    c.set("str", "v")
    c.rpush("l", "a")
    assert c.save() is True
    c.close()
    srv.stop()
    srv = ServerProcess(server_binary, ["--dir", str(tmp_path), "--save", ""])
    c = srv.client(decode_responses=True)
    try:
        assert c.get("str") == "v"
        assert c.exists("l") == 0
    finally:
        c.close()
        srv.stop()


def test_command_table_has_the_new_commands(r):
    info = r.execute_command("COMMAND", "INFO", "lpush", "rpop", "smembers")
    assert info["lpush"]["arity"] == -3 and info["rpop"]["arity"] == -2 and info["smembers"]["arity"] == 2
    assert "write" in info["lpush"]["flags"] and "readonly" in info["smembers"]["flags"]
