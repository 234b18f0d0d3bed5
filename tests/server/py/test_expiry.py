"""Key expiry (src/server/cmd_expire.cc, expire_args.cc) against a real
kvcg-server: SET's EX/PX/EXAT/PXAT/KEEPTTL, SETEX, PSETEX, GETEX, EXPIRE,
PEXPIRE, EXPIREAT, PEXPIREAT with NX/XX/GT/LT, TTL, PTTL, EXPIRETIME,
PEXPIRETIME, PERSIST; which writes keep or clear a TTL; lazy expiry (an
expired key is never returned) and active expiry (it leaves DBSIZE without
being touched); INFO's keyspace line and expired_keys; the hz option.

Replies and error texts are Redis 7.0.15's (the same cases as Redis's own
unit/expire and unit/type/string tests, plus the edges around them).
"""
import time

import pytest
import redis


def error_text(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


def cmd(r, *args):
    """The server's reply as sent (redis-py's callbacks would turn SET's "OK"
    into True and SET ... GET's value into False)."""
    name = args[0].upper()
    callback = r.response_callbacks.pop(name, None)
    try:
        return r.execute_command(*args)
    finally:
        if callback is not None:
            r.response_callbacks[name] = callback


def now_ms():
    return int(time.time() * 1000)


def wait_until(predicate, timeout=10.0, step=0.02):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


# --- SET with expiry options

def test_set_ex_px_exat_pxat(r):
    assert cmd(r, "SET", "a", "v", "EX", "100") == "OK"
    assert 99 <= r.ttl("a") <= 100
    assert cmd(r, "SET", "b", "v", "PX", "100000") == "OK"
    assert 99000 <= r.pttl("b") <= 100000
    at = int(time.time()) + 200
    assert cmd(r, "SET", "c", "v", "EXAT", str(at)) == "OK"
    assert r.expiretime("c") == at
    pat = now_ms() + 300000
    assert cmd(r, "SET", "d", "v", "PXAT", str(pat)) == "OK"
    assert r.pexpiretime("d") == pat
    assert cmd(r, "EXPIRETIME", "d") == pat // 1000
    assert r.get("d") == "v"


def test_set_options_are_case_insensitive_and_combine(r):
    assert cmd(r, "set", "k", "v", "ex", "100", "nx") == "OK"
    assert cmd(r, "SET", "k", "w", "Nx", "Px", "5000") is None  # exists: not stored
    assert r.get("k") == "v" and r.ttl("k") > 50
    assert cmd(r, "SET", "k", "w", "XX", "GET", "PX", "5000") == "v"
    assert r.get("k") == "w" and 0 < r.pttl("k") <= 5000
    assert cmd(r, "SET", "new", "v", "XX", "EX", "10") is None
    assert r.exists("new") == 0
    # The same expiry option twice is accepted, the last one wins (as Redis).
    assert cmd(r, "SET", "k", "v", "EX", "10", "EX", "1000") == "OK"
    assert r.ttl("k") > 900


def test_plain_set_clears_the_ttl_and_keepttl_keeps_it(r):
    r.set("k", "v", ex=100)
    r.set("k", "w")
    assert r.ttl("k") == -1
    r.set("k", "v", ex=100)
    assert cmd(r, "SET", "k", "w", "KEEPTTL") == "OK"
    assert r.get("k") == "w" and 90 <= r.ttl("k") <= 100
    # KEEPTTL on a new key: no TTL.
    assert cmd(r, "SET", "fresh", "v", "KEEPTTL") == "OK"
    assert r.ttl("fresh") == -1
    # GETSET and MSET clear it too.
    r.set("k", "v", ex=100)
    assert r.getset("k", "x") == "v"
    assert r.ttl("k") == -1
    r.set("k", "v", ex=100)
    r.mset({"k": "y"})
    assert r.ttl("k") == -1


def test_set_expiry_errors(r):
    syntax = "syntax error"
    for args in (["EX", "10", "PX", "10"], ["EX", "10", "KEEPTTL"], ["KEEPTTL", "EXAT", "1"],
                 ["PXAT", "1", "EXAT", "1"], ["EX"], ["NX", "XX", "EX", "1"], ["PERSIST"]):
        assert error_text(r.execute_command, "SET", "k", "v", *args) == syntax, args
    for t in ("0", "-1", "10000000000000000", "-9999999999999999"):
        assert error_text(r.execute_command, "SET", "k", "v", "EX", t) == "invalid expire time in 'set' command"
    assert error_text(r.execute_command, "SET", "k", "v", "PX", "0") == "invalid expire time in 'set' command"
    assert error_text(r.execute_command, "SET", "k", "v", "PXAT", "-5") == "invalid expire time in 'set' command"
    # now + ttl would pass INT64_MAX.
    assert error_text(r.execute_command, "SET", "k", "v", "PX", str(2**63 - 1000)) == \
        "invalid expire time in 'set' command"
    for t in ("", "1.5", "abc", "99999999999999999999"):
        assert error_text(r.execute_command, "SET", "k", "v", "EX", t) == "value is not an integer or out of range"
    assert r.exists("k") == 0  # none of them stored
    # PXAT takes any positive time (no addition): INT64_MAX works.
    assert cmd(r, "SET", "k", "v", "PXAT", str(2**63 - 1)) == "OK"
    assert r.pexpiretime("k") == 2**63 - 1


def test_set_with_a_time_in_the_past_deletes(r):
    r.set("k", "v")
    assert cmd(r, "SET", "k", "w", "PXAT", "1") == "OK"
    assert r.get("k") is None and r.exists("k") == 0
    assert cmd(r, "SET", "k", "w", "EXAT", "1", "GET") is None
    assert r.exists("k") == 0


def test_set_px_expires(r):
    r.set("k", "v", px=100)
    assert r.get("k") == "v"
    assert wait_until(lambda: r.get("k") is None, timeout=5)
    assert r.ttl("k") == -2 and r.pttl("k") == -2 and r.exists("k") == 0


# --- SETEX, PSETEX

def test_setex_psetex(r):
    assert r.setex("k", 100, "v") is True
    assert r.get("k") == "v" and 99 <= r.ttl("k") <= 100
    assert r.psetex("p", 100000, "v") is True
    assert 99000 <= r.pttl("p") <= 100000
    assert error_text(r.execute_command, "SETEX", "k", "0", "v") == "invalid expire time in 'setex' command"
    assert error_text(r.execute_command, "SETEX", "k", "-10", "v") == "invalid expire time in 'setex' command"
    assert error_text(r.execute_command, "PSETEX", "k", "0", "v") == "invalid expire time in 'psetex' command"
    assert error_text(r.execute_command, "SETEX", "k", "x", "v") == "value is not an integer or out of range"
    assert error_text(r.execute_command, "SETEX", "k", "10") == "wrong number of arguments for 'setex' command"
    assert r.get("k") == "v"  # the failed SETEXes left it alone
    r.psetex("short", 50, "v")
    assert wait_until(lambda: r.exists("short") == 0, timeout=5)


# --- GETEX, GETDEL

def test_getex(r):
    r.set("k", "v")
    assert cmd(r, "GETEX", "k") == "v"
    assert r.ttl("k") == -1
    assert cmd(r, "GETEX", "k", "EX", "100") == "v"
    assert 99 <= r.ttl("k") <= 100
    assert cmd(r, "GETEX", "k", "PX", "50000") == "v"
    assert 49000 <= r.pttl("k") <= 50000
    at = int(time.time()) + 500
    assert cmd(r, "GETEX", "k", "EXAT", str(at)) == "v"
    assert r.expiretime("k") == at
    assert cmd(r, "GETEX", "k", "PXAT", str(at * 1000 + 7)) == "v"
    assert r.pexpiretime("k") == at * 1000 + 7
    assert cmd(r, "GETEX", "k", "PERSIST") == "v"
    assert r.ttl("k") == -1
    assert cmd(r, "GETEX", "k", "PERSIST") == "v"  # no TTL: stays without
    assert cmd(r, "GETEX", "nokey", "EX", "10") is None
    assert r.exists("nokey") == 0


def test_getex_with_a_past_time_returns_the_value_and_deletes(r):
    r.set("k", "v")
    assert cmd(r, "GETEX", "k", "PXAT", "1") == "v"
    assert r.exists("k") == 0
    r.set("k", "v")
    assert cmd(r, "GETEX", "k", "EXAT", str(int(time.time()) - 10)) == "v"
    assert r.get("k") is None


def test_getex_errors(r):
    r.set("k", "v")
    for args in (["EX", "10", "PERSIST"], ["PERSIST", "PX", "10"], ["EX", "10", "PX", "10"], ["EX"], ["NX"],
                 ["KEEPTTL"], ["GET"], ["BOGUS"]):
        assert error_text(r.execute_command, "GETEX", "k", *args) == "syntax error", args
    assert error_text(r.execute_command, "GETEX", "k", "EX", "0") == "invalid expire time in 'getex' command"
    assert error_text(r.execute_command, "GETEX", "k", "EX", "10000000000000000") == \
        "invalid expire time in 'getex' command"
    assert error_text(r.execute_command, "GETEX", "k", "PX", "-9999999999999999") == \
        "invalid expire time in 'getex' command"
    assert error_text(r.execute_command, "GETEX", "k", "EX", "ten") == "value is not an integer or out of range"
    # As Redis: the key is looked up first, so a missing key answers nil.
    assert cmd(r, "GETEX", "nokey", "EX", "0") is None
    assert r.ttl("k") == -1  # unchanged by the failures
    assert error_text(r.execute_command, "GETEX") == "wrong number of arguments for 'getex' command"


def test_getdel_with_a_ttl(r):
    r.set("k", "v", ex=100)
    assert r.getdel("k") == "v"
    assert r.exists("k") == 0 and r.ttl("k") == -2
    r.set("k", "v", px=50)
    assert wait_until(lambda: r.getdel("k") is None, timeout=5)


# --- EXPIRE family

def test_expire_pexpire_expireat_pexpireat(r):
    r.set("k", "v")
    assert r.expire("k", 100) is True
    assert 99 <= r.ttl("k") <= 100
    assert r.pexpire("k", 200000) is True
    assert 199000 <= r.pttl("k") <= 200000
    at = int(time.time()) + 300
    assert r.expireat("k", at) is True
    assert r.expiretime("k") == at
    assert r.pexpireat("k", at * 1000 + 123) is True
    assert r.pexpiretime("k") == at * 1000 + 123
    assert r.expire("nokey", 100) is False
    assert cmd(r, "PEXPIREAT", "nokey", "1") == 0


def test_ttl_rounding_and_missing_keys(r):
    r.set("k", "v")
    r.pexpire("k", 1600)
    assert r.ttl("k") == 2  # (ms + 500) / 1000, as Redis
    r.pexpire("k", 1400)
    assert r.ttl("k") == 1
    assert r.ttl("nokey") == -2 and r.pttl("nokey") == -2
    assert r.expiretime("nokey") == -2 and r.pexpiretime("nokey") == -2
    r.set("p", "v")
    assert r.ttl("p") == -1 and r.pttl("p") == -1
    assert r.expiretime("p") == -1 and r.pexpiretime("p") == -1


def test_expire_in_the_past_deletes_and_answers_one(r):
    for name, t in (("EXPIRE", "-1"), ("EXPIRE", "0"), ("PEXPIRE", "-100"), ("EXPIREAT", "1"),
                    ("PEXPIREAT", "0"), ("EXPIREAT", str(int(time.time()) - 5))):
        r.set("k", "v")
        assert cmd(r, name, "k", t) == 1, (name, t)
        assert r.exists("k") == 0 and r.get("k") is None, (name, t)
    # A negative time with LT on a key with or without TTL (Redis's tests).
    r.set("k", "v", ex=100)
    assert cmd(r, "EXPIRE", "k", "-10", "LT") == 1
    assert r.ttl("k") == -2
    r.set("k", "v")
    assert cmd(r, "EXPIRE", "k", "-10", "LT") == 1
    assert r.ttl("k") == -2
    # GT with a past time never applies.
    r.set("k", "v", ex=100)
    assert cmd(r, "EXPIRE", "k", "-10", "GT") == 0
    assert r.ttl("k") > 90


def test_expire_nx_xx_gt_lt(r):
    e = lambda *a: cmd(r, "EXPIRE", "foo", *a)
    r.set("foo", "bar", ex=100)
    assert e("200", "NX") == 0 and 90 <= r.ttl("foo") <= 100
    r.set("foo", "bar")
    assert e("200", "NX") == 1 and 190 <= r.ttl("foo") <= 200
    r.set("foo", "bar", ex=100)
    assert e("200", "XX") == 1 and 190 <= r.ttl("foo") <= 200
    r.set("foo", "bar")
    assert e("200", "XX") == 0 and r.ttl("foo") == -1
    r.set("foo", "bar", ex=100)
    assert e("200", "GT") == 1 and 190 <= r.ttl("foo") <= 200
    r.set("foo", "bar", ex=200)
    assert e("100", "GT") == 0 and 190 <= r.ttl("foo") <= 200
    r.set("foo", "bar")
    assert e("200", "GT") == 0 and r.ttl("foo") == -1  # no TTL counts as infinite
    r.set("foo", "bar", ex=100)
    assert e("200", "LT") == 0 and 90 <= r.ttl("foo") <= 100
    r.set("foo", "bar", ex=200)
    assert e("100", "LT") == 1 and 90 <= r.ttl("foo") <= 100
    r.set("foo", "bar")
    assert e("100", "LT") == 1 and 90 <= r.ttl("foo") <= 100
    r.set("foo", "bar", ex=200)
    assert e("100", "LT", "XX") == 1 and 90 <= r.ttl("foo") <= 100
    r.set("foo", "bar")
    assert e("100", "LT", "XX") == 0 and r.ttl("foo") == -1
    r.set("foo", "bar", ex=100)
    assert e("200", "GT", "XX") == 1 and 190 <= r.ttl("foo") <= 200
    r.set("foo", "bar")
    assert e("200", "gt", "xx") == 0 and r.ttl("foo") == -1
    assert cmd(r, "EXPIRE", "none", "100", "NX") == 0
    assert cmd(r, "EXPIRE", "none", "100", "LT", "XX") == 0
    # Equal times: neither GT nor LT applies.
    at = int(time.time()) + 1000
    r.set("foo", "bar", exat=at)
    assert cmd(r, "EXPIREAT", "foo", str(at), "GT") == 0
    assert cmd(r, "EXPIREAT", "foo", str(at), "LT") == 0
    assert cmd(r, "EXPIREAT", "foo", str(at), "XX") == 1


def test_expire_option_errors(r):
    r.set("foo", "bar")
    nx = "NX and XX, GT or LT options at the same time are not compatible"
    assert error_text(r.execute_command, "EXPIRE", "foo", "200", "LT", "GT") == \
        "GT and LT options at the same time are not compatible"
    for opts in (["NX", "GT"], ["NX", "LT"], ["NX", "XX"], ["xx", "nx"]):
        assert error_text(r.execute_command, "EXPIRE", "foo", "200", *opts) == nx, opts
    assert error_text(r.execute_command, "EXPIRE", "foo", "200", "AB") == "Unsupported option AB"
    assert error_text(r.execute_command, "EXPIRE", "foo", "200", "XX", "AB") == "Unsupported option AB"
    # Flags are checked before the time.
    assert error_text(r.execute_command, "EXPIRE", "foo", "x", "AB") == "Unsupported option AB"
    assert error_text(r.execute_command, "EXPIRE", "foo", "") == "value is not an integer or out of range"
    assert error_text(r.execute_command, "PEXPIRE", "foo", "1.5") == "value is not an integer or out of range"
    assert error_text(r.execute_command, "EXPIRE", "foo") == "wrong number of arguments for 'expire' command"
    assert error_text(r.execute_command, "TTL", "a", "b") == "wrong number of arguments for 'ttl' command"
    assert r.ttl("foo") == -1


def test_expire_overflow(r):
    r.set("foo", "bar")
    for t in ("9223370399119966", "9223372036854776", "10000000000000000", "18446744073709561",
              "-9223372036854776", "-9999999999999999"):
        assert error_text(r.execute_command, "EXPIRE", "foo", t) == "invalid expire time in 'expire' command", t
    assert error_text(r.execute_command, "PEXPIRE", "foo", "9223372036854770000") == \
        "invalid expire time in 'pexpire' command"
    assert error_text(r.execute_command, "EXPIREAT", "foo", "9223372036854776") == \
        "invalid expire time in 'expireat' command"
    assert r.ttl("foo") == -1
    assert cmd(r, "PEXPIREAT", "foo", "9223372036854770000") == 1
    assert r.pexpiretime("foo") == 9223372036854770000


def test_expire_then_set_keeps_the_key_persistent(r):
    r.set("k", "v", px=100)
    r.set("k", "w")
    time.sleep(0.2)
    assert r.get("k") == "w" and r.ttl("k") == -1


# --- PERSIST

def test_persist(r):
    r.set("k", "v", ex=100)
    assert r.persist("k") is True
    assert r.ttl("k") == -1
    assert r.persist("k") is False
    assert r.persist("nokey") is False
    r.set("k", "v", px=100)
    r.persist("k")
    time.sleep(0.2)
    assert r.get("k") == "v"


# --- writes that keep the TTL, and the keyspace commands that carry it

@pytest.mark.parametrize("write", [
    lambda r: r.incr("k"),
    lambda r: r.incrby("k", 5),
    lambda r: r.decr("k"),
    lambda r: r.incrbyfloat("k", 1.5),
    lambda r: r.append("k", "0"),
    lambda r: r.setrange("k", 0, "9"),
    lambda r: r.setbit("k", 3, 1),
])
def test_read_modify_write_commands_keep_the_ttl(r, write):
    r.set("k", "10", ex=100)
    write(r)
    assert 90 <= r.ttl("k") <= 100


def test_rmw_keeps_the_key_expiring(r):
    r.set("k", "1", px=150)
    r.incr("k")
    assert wait_until(lambda: r.exists("k") == 0, timeout=5)


def test_rename_and_copy_carry_the_ttl(r):
    r.set("src", "v", ex=100)
    r.set("dst", "old")
    assert r.rename("src", "dst") is True
    assert r.get("dst") == "v" and 90 <= r.ttl("dst") <= 100
    # A source without TTL clears the destination's.
    r.set("a", "1")
    r.set("b", "2", ex=100)
    r.rename("a", "b")
    assert r.ttl("b") == -1
    r.set("s", "v", px=100000)
    assert r.copy("s", "c") is True
    assert 90000 <= r.pttl("c") <= 100000
    assert 90000 <= r.pttl("s") <= 100000
    r.set("s2", "v")
    r.set("c2", "x", ex=100)
    assert r.copy("s2", "c2", replace=True) is True
    assert r.ttl("c2") == -1
    assert r.renamenx("s", "fresh") is True
    assert 90 <= r.ttl("fresh") <= 100


def test_rename_of_an_expired_key(r):
    r.set("k", "v", px=50)
    time.sleep(0.15)
    assert error_text(r.rename, "k", "k2") == "no such key"
    assert r.copy("k", "k3") is False


# --- lazy and active expiry

def test_lazy_expiry_without_active_sweeps(start_server):
    srv = start_server("--hz", "0")
    c = srv.client(decode_responses=True)
    c.set("gone", "v", px=50)
    c.set("stays", "v")
    time.sleep(0.2)
    # Never returned, by any read...
    assert c.get("gone") is None
    assert c.exists("gone") == 0
    assert c.ttl("gone") == -2
    assert c.mget("gone", "stays") == [None, "v"]
    assert c.keys("*") == ["stays"]
    assert c.scan(0, count=1000)[1] == ["stays"]
    assert c.randomkey() == "stays"
    assert c.getrange("gone", 0, -1) == ""
    assert c.type("gone") == "none"
    # ... and a write finds it absent.
    assert c.set("gone", "new", nx=True) is True
    assert c.get("gone") == "new" and c.ttl("gone") == -1
    c.set("x", "v", px=50)
    time.sleep(0.2)
    assert c.delete("x") == 0
    assert c.incr("x2") == 1
    assert c.config_get("hz") == {"hz": "0"}
    c.close()


def test_active_expiry_reclaims_without_access(start_server):
    srv = start_server("--hz", "50")
    c = srv.client(decode_responses=True)
    before = int(c.info("stats")["expired_keys"])
    pipe = c.pipeline(transaction=False)
    for i in range(200):
        pipe.set(f"k{i}", "v", px=100)
    pipe.set("keep", "v")
    pipe.execute()
    assert c.dbsize() == 201
    # No command touches the keys: only the sweeper can remove them.
    assert wait_until(lambda: c.dbsize() == 1, timeout=10), c.dbsize()
    assert int(c.info("stats")["expired_keys"]) - before == 200
    assert c.get("keep") == "v"
    c.close()


def test_info_keyspace_and_expired_keys(r):
    r.config_resetstat()
    assert "db0" not in r.info("keyspace")
    r.set("a", "1")
    r.set("b", "2", ex=1000)
    r.set("c", "3", px=10000000)
    ks = r.info("keyspace")["db0"]
    assert ks["keys"] == 3 and ks["expires"] == 2
    # avg_ttl is an estimate the active-expiry sweep makes (0 until its first
    # pass, as in Redis); it must describe these keys, not flushed ones.
    assert 0 <= ks["avg_ttl"] <= 10000000
    assert wait_until(lambda: r.info("keyspace")["db0"]["avg_ttl"] > 0, timeout=10)
    assert r.info("keyspace")["db0"]["avg_ttl"] <= 10000000
    raw = cmd(r, "INFO", "keyspace")
    assert "db0:keys=3,expires=2,avg_ttl=" in raw
    r.persist("b")
    assert r.info("keyspace")["db0"]["expires"] == 1
    r.set("d", "v", px=30)
    assert wait_until(lambda: int(r.info("stats")["expired_keys"]) >= 1, timeout=10)
    assert "expired_keys" in r.info("stats")
    r.config_resetstat()
    assert int(r.info("stats")["expired_keys"]) == 0


def test_hz_option(start_server):
    srv = start_server("--hz", "100")
    c = srv.client(decode_responses=True)
    assert c.config_get("hz") == {"hz": "100"}
    c.close()
    srv.stop()
    with pytest.raises(RuntimeError, match="hz"):
        start_server("--hz", "501")  # over Redis's maximum


def test_config_set_hz_starts_and_stops_the_sweeper(start_server):
    # Started with lazy expiry only: nothing reclaims untouched keys.
    srv = start_server("--hz", "0")
    c = srv.client(decode_responses=True)
    pipe = c.pipeline(transaction=False)
    for i in range(100):
        pipe.set(f"a{i}", "v", px=50)
    pipe.set("keep", "v")
    pipe.execute()
    time.sleep(0.5)
    assert c.dbsize() == 101  # expired, but no sweeper ran
    # CONFIG SET hz turns active expiry on at run time ...
    assert c.config_set("hz", "50") is True
    assert c.config_get("hz") == {"hz": "50"}
    assert wait_until(lambda: c.dbsize() == 1, timeout=10), c.dbsize()
    # ... and 0 turns it off again.
    assert c.config_set("hz", "0") is True
    for i in range(100):
        c.set(f"b{i}", "v", px=50)
    time.sleep(0.5)
    assert c.dbsize() == 101
    with pytest.raises(redis.ResponseError, match="hz"):
        c.config_set("hz", "501")
    assert c.config_get("hz") == {"hz": "0"}
    c.close()


def test_command_table_entries(r):
    table = r.command()
    for name, arity, flag in (("expire", -3, "write"), ("pexpire", -3, "write"), ("expireat", -3, "write"),
                              ("pexpireat", -3, "write"), ("ttl", 2, "readonly"), ("pttl", 2, "readonly"),
                              ("expiretime", 2, "readonly"), ("pexpiretime", 2, "readonly"),
                              ("persist", 2, "write"), ("setex", 4, "write"), ("psetex", 4, "write"),
                              ("getex", -2, "write")):
        assert table[name]["arity"] == arity, name
        assert flag in table[name]["flags"], name
        assert table[name]["first_key_pos"] == 1 and table[name]["last_key_pos"] == 1, name
