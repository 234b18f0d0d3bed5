"""Persistence through kvcg-server: SAVE/BGSAVE/LASTSAVE, appendonly, BGREWRITEAOF,
SHUTDOWN [NOSAVE|SAVE], INFO persistence, CONFIG SET of the persistence options and
the MISCONF refusal, each checked across a real restart of the process on the same --dir.

A restart after SIGKILL proves what was on disk (the server saves and fsyncs
nothing on its way down); a restart after SIGTERM/SHUTDOWN proves the shutdown
path. Waits poll INFO instead of sleeping.
"""
import os
import signal
import subprocess
import time

import pytest
import redis

from conftest import ServerProcess, persistence_info, server_command, status_reply, wait_until

PERSISTENCE_FIELDS = [
    "loading", "rdb_changes_since_last_save", "rdb_bgsave_in_progress", "rdb_last_save_time",
    "rdb_last_bgsave_status", "rdb_last_bgsave_time_sec", "rdb_saves", "aof_enabled", "aof_rewrite_in_progress",
    "aof_rewrite_scheduled", "aof_last_rewrite_time_sec", "aof_last_bgrewrite_status", "aof_last_write_status",
    "aof_current_size", "aof_base_size", "aof_delayed_fsync", "kvcg_loaded_keys", "kvcg_load_seconds",
    "kvcg_load_source",
]


def start(binary, data_dir, *args):
    srv = ServerProcess(binary, ["--dir", str(data_dir)] + list(args))
    c = srv.client()
    assert persistence_info(c)["kvcg_persistence"] == 1, \
        "Store::Open returned no kvcg::Durable although the server passed a durability dir"
    return srv, c


def restart_after_kill(srv, binary, data_dir, *args):
    srv.kill()
    return start(binary, data_dir, *args)


def sample_data():
    """Binary keys and values, an empty value, a large one."""
    data = {
        b"plain": b"value",
        b"empty": b"",
        b"bin\x00key\xff": bytes(range(256)) * 4,
        b"crlf\r\n": b"line1\r\nline2\r\n",
        b"big": os.urandom(1 << 20),
    }
    for i in range(500):
        data[f"k:{i}".encode()] = f"v:{i}:".encode() + os.urandom(i % 64)
    return data


def put_all(c, data):
    p = c.pipeline(transaction=False)
    for k, v in data.items():
        p.set(k, v)
    assert all(p.execute())


def assert_state(c, data):
    keys = list(data)
    got = c.mget(keys)
    for k, v in zip(keys, got):
        assert v == data[k], f"key {k!r}: expected {data[k]!r:.60}, got {v!r:.60}"
    assert c.dbsize() == len(data)


def wait_bgsave_done(c, saves_before):
    def done():
        p = persistence_info(c)
        return p["rdb_bgsave_in_progress"] == 0 and p["rdb_saves"] > saves_before and p
    return wait_until(done, what="background save to finish")


def wait_rewrite_done(c):
    def done():
        p = persistence_info(c)
        return p["aof_rewrite_in_progress"] == 0 and p["aof_rewrite_scheduled"] == 0 and p
    return wait_until(done, what="log rewrite to finish")


def test_save_and_restart_keeps_every_key(server_binary, tmp_path):
    srv, c = start(server_binary, tmp_path, "--save", "")
    data = sample_data()
    put_all(c, data)
    assert c.execute_command("SAVE") in (b"OK", True)
    assert (tmp_path / "dump.kvcg").is_file()
    assert c.lastsave().timestamp() > 0
    srv, c = restart_after_kill(srv, server_binary, tmp_path, "--save", "")
    try:
        assert_state(c, data)
        p = persistence_info(c)
        assert p["kvcg_loaded_keys"] == len(data)
        assert str(p["kvcg_load_source"]).startswith("snapshot")
        loaded = [i for i, line in enumerate(srv.stdout_lines)
                  if "event=loaded" in line and f"keys={len(data)}" in line]
        ready = [i for i, line in enumerate(srv.stdout_lines) if line.startswith("kvcg-server ready:")]
        assert loaded and ready and loaded[0] < ready[0]  # the ready line stays the last start-up line
    finally:
        srv.stop()


def test_bgsave_and_lastsave(server_binary, tmp_path):
    srv, c = start(server_binary, tmp_path, "--save", "")
    c.set("a", "1")
    assert c.execute_command("SAVE") in (b"OK", True)
    first = c.lastsave()
    saves = persistence_info(c)["rdb_saves"]
    # LASTSAVE has a one-second resolution: let the clock pass the next second.
    wait_until(lambda: int(time.time()) > first.timestamp(), what="the next second")
    c.set("b", "2")
    assert status_reply(srv, "BGSAVE") == "+Background saving started"
    p = wait_bgsave_done(c, saves)
    assert p["rdb_last_bgsave_status"] == "ok"
    assert p["rdb_changes_since_last_save"] == 0
    assert c.lastsave() > first
    assert p["rdb_last_save_time"] == int(c.lastsave().timestamp())
    # SCHEDULE with nothing running starts one at once.
    saves = p["rdb_saves"]
    assert status_reply(srv, "BGSAVE", "SCHEDULE") in ("+Background saving started",
                                                       "+Background saving scheduled")
    wait_bgsave_done(c, saves)
    with pytest.raises(redis.ResponseError, match="syntax error"):
        c.execute_command("BGSAVE", "NOW")
    srv, c = restart_after_kill(srv, server_binary, tmp_path, "--save", "")
    try:
        assert c.mget("a", "b") == [b"1", b"2"]
    finally:
        srv.stop()


@pytest.mark.parametrize("fsync", ["always", "everysec", "no"])
def test_appendonly_restart_keeps_keys(server_binary, tmp_path, fsync):
    # save "": no snapshot is ever written, so what comes back came from the log.
    args = ["--appendonly", "yes", "--appendfsync", fsync, "--save", ""]
    srv, c = start(server_binary, tmp_path, *args)
    data = sample_data()
    put_all(c, data)
    for i in range(50):
        assert c.incr("counter") == i + 1
    data[b"counter"] = b"50"
    assert persistence_info(c)["aof_enabled"] == 1
    if fsync == "always":
        # Acknowledged means fsync'ed: a crash right away loses nothing.
        srv, c = restart_after_kill(srv, server_binary, tmp_path, *args)
    else:
        srv.stop()  # SIGTERM fsyncs the log on the way down
        assert srv.proc.returncode == 0
        srv, c = start(server_binary, tmp_path, *args)
    try:
        assert not (tmp_path / "dump.kvcg").exists()
        assert list((tmp_path / "appendonlydir").iterdir())
        assert_state(c, data)
        assert str(persistence_info(c)["kvcg_load_source"]).startswith("log")
    finally:
        srv.stop()


def test_config_set_appendonly_at_runtime(server_binary, tmp_path):
    srv, c = start(server_binary, tmp_path, "--save", "")
    before = {f"before:{i}".encode(): os.urandom(32) for i in range(200)}
    put_all(c, before)
    assert c.config_set("appendfsync", "always")
    assert c.config_set("appendonly", "yes")
    assert c.config_get("appendonly") == {"appendonly": "yes"}
    assert persistence_info(c)["aof_enabled"] == 1
    after = {f"after:{i}".encode(): os.urandom(32) for i in range(200)}
    put_all(c, after)
    c.delete(b"before:0")
    expected = {**before, **after}
    del expected[b"before:0"]
    # CONFIG REWRITE does not exist: the restart passes the setting itself.
    srv, c = restart_after_kill(srv, server_binary, tmp_path, "--save", "", "--appendonly", "yes")
    try:
        assert_state(c, expected)
        # And off again: the log is closed, nothing more is appended to it.
        assert c.config_set("appendonly", "no")
        assert persistence_info(c)["aof_enabled"] == 0
    finally:
        srv.stop()


def test_bgrewriteaof_then_restart(server_binary, tmp_path):
    args = ["--appendonly", "yes", "--appendfsync", "always", "--save", ""]
    srv, c = start(server_binary, tmp_path, *args)
    expected = {}
    for round_ in range(5):  # overwrites and deletes: the rewrite must keep only the last state
        data = {f"k:{i}".encode(): f"r{round_}:{i}".encode() for i in range(300)}
        put_all(c, data)
        expected.update(data)
        for i in range(round_, 300, 7):
            c.delete(f"k:{i}".encode())
            expected.pop(f"k:{i}".encode(), None)
    size_before = persistence_info(c)["aof_current_size"]
    reply = status_reply(srv, "BGREWRITEAOF")
    assert reply in ("+Background append only file rewriting started",
                     "+Background append only file rewriting scheduled")
    p = wait_rewrite_done(c)
    assert p["aof_last_bgrewrite_status"] == "ok"
    assert p["aof_last_rewrite_time_sec"] >= 0
    assert 0 < p["aof_base_size"] and p["aof_current_size"] < size_before
    extra = {f"late:{i}".encode(): b"x" * i for i in range(100)}  # after the rewrite: in the new increment
    put_all(c, extra)
    expected.update(extra)
    srv, c = restart_after_kill(srv, server_binary, tmp_path, *args)
    try:
        assert_state(c, expected)
    finally:
        srv.stop()


def test_bgrewriteaof_needs_appendonly(server_binary, tmp_path):
    srv, c = start(server_binary, tmp_path, "--save", "")
    try:
        with pytest.raises(redis.ResponseError, match="appendonly"):
            c.execute_command("BGREWRITEAOF")
    finally:
        srv.stop()


@pytest.mark.parametrize("via", ["snapshot", "log"])
def test_del_and_flushall_survive_restart(server_binary, tmp_path, via):
    args = (["--appendonly", "yes", "--appendfsync", "always", "--save", ""] if via == "log"
            else ["--save", "3600 1"])

    def persist(c):
        if via == "snapshot":
            assert c.execute_command("SAVE") in (b"OK", True)

    srv, c = start(server_binary, tmp_path, *args)
    c.mset({"a": "1", "b": "2", "c": "3"})
    assert c.delete("a") == 1
    assert c.getdel("b") == b"2"
    persist(c)
    srv, c = restart_after_kill(srv, server_binary, tmp_path, *args)
    assert c.mget("a", "b", "c") == [None, None, b"3"]
    c.set("d", "4")
    persist(c)
    # FLUSHALL with save rules writes an empty snapshot at once (Redis 7.0);
    # with the log it is a logged Clear. Either way no old key comes back.
    assert c.flushall()
    srv, c = restart_after_kill(srv, server_binary, tmp_path, *args)
    try:
        assert c.dbsize() == 0
        c.set("e", "5")
        persist(c)
        srv, c = restart_after_kill(srv, server_binary, tmp_path, *args)
        assert c.mget("c", "d", "e") == [None, None, b"5"]
    finally:
        srv.stop()


def test_info_persistence_fields(server_binary, tmp_path):
    srv, c = start(server_binary, tmp_path, "--save", "", "--appendonly", "yes")
    try:
        for section in ([], ["all"], ["persistence"], ["everything"]):
            info = c.info(*section)
            missing = [f for f in PERSISTENCE_FIELDS if f not in info]
            assert not missing, f"INFO {section}: missing {missing}"
        assert "rdb_saves" not in c.info("server")
        p = persistence_info(c)
        assert p["loading"] == 0 and p["aof_enabled"] == 1
        assert p["rdb_last_bgsave_status"] == "ok" and p["aof_last_write_status"] == "ok"
        assert str(p["kvcg_load_source"]).startswith(("none", "log"))  # a fresh dir: nothing or an empty log
        size0 = p["aof_current_size"]
        for i in range(100):
            c.set(f"k{i}", "v" * 100)
        p = persistence_info(c)
        assert p["rdb_changes_since_last_save"] >= 100
        # appendfsync everysec: the records reach the file within about a second.
        wait_until(lambda: persistence_info(c)["aof_current_size"] >= size0 + 100 * 100, what="the log to grow")
        saves = p["rdb_saves"]
        assert c.execute_command("SAVE") in (b"OK", True)
        p = persistence_info(c)
        assert p["rdb_changes_since_last_save"] == 0 and p["rdb_saves"] == saves + 1
        assert abs(p["rdb_last_save_time"] - time.time()) < 120
    finally:
        srv.stop()


def test_shutdown_saves_and_nosave_does_not(server_binary, tmp_path):
    srv, c = start(server_binary, tmp_path)  # Redis's default save rules
    c.set("k1", "v1")
    c.shutdown()  # answered by closing the connection
    assert srv.wait() == 0
    assert (tmp_path / "dump.kvcg").is_file()
    srv, c = start(server_binary, tmp_path)
    assert c.get("k1") == b"v1"
    c.set("k2", "v2")
    c.shutdown(nosave=True)  # answered by closing the connection
    assert srv.wait() == 0
    srv, c = start(server_binary, tmp_path)
    assert c.mget("k1", "k2") == [b"v1", None]
    # SIGTERM behaves like SHUTDOWN: it saves.
    c.set("k3", "v3")
    srv.proc.send_signal(signal.SIGTERM)
    assert srv.wait() == 0
    srv, c = start(server_binary, tmp_path, "--save", "")
    try:
        assert c.mget("k1", "k3") == [b"v1", b"v3"]
        # Without save rules SHUTDOWN does not save; SHUTDOWN SAVE does.
        c.set("k4", "v4")
        c.shutdown()
        assert srv.wait() == 0
        srv, c = start(server_binary, tmp_path, "--save", "")
        assert c.get("k4") is None
        c.set("k5", "v5")
        c.shutdown(save=True)
        assert srv.wait() == 0
        srv, c = start(server_binary, tmp_path, "--save", "")
        assert c.get("k5") == b"v5"
        with pytest.raises(redis.ResponseError, match="syntax error"):
            c.execute_command("SHUTDOWN", "SAVE", "NOSAVE")
    finally:
        srv.stop()


def test_shutdown_with_appendonly_keeps_everysec_writes(server_binary, tmp_path):
    # NOSAVE still fsyncs the log: everything acknowledged before SHUTDOWN is back.
    args = ["--appendonly", "yes", "--appendfsync", "no", "--save", ""]
    srv, c = start(server_binary, tmp_path, *args)
    data = {f"k{i}".encode(): os.urandom(16) for i in range(1000)}
    put_all(c, data)
    c.shutdown(nosave=True)  # answered by closing the connection
    assert srv.wait() == 0
    srv, c = start(server_binary, tmp_path, *args)
    try:
        assert_state(c, data)
    finally:
        srv.stop()


def test_config_set_persistence_options(server_binary, tmp_path):
    srv, c = start(server_binary, tmp_path, "--save", "")
    try:
        def err(name, value):
            with pytest.raises(redis.ResponseError) as e:
                c.config_set(name, value)
            return str(e.value)

        assert err("appendfsync", "sometimes") == ("CONFIG SET failed (possibly related to argument 'appendfsync') - "
                                                   "argument(s) must be one of the following: everysec, always, no")
        assert err("appendonly", "maybe") == ("CONFIG SET failed (possibly related to argument 'appendonly') - "
                                              "argument must be 'yes' or 'no'")
        for bad in ("100", "0 1", "abc 1", "60 -1", "60 1 30"):
            assert err("save", bad) == ("CONFIG SET failed (possibly related to argument 'save') - "
                                        "Invalid save parameters")
        assert err("stop-writes-on-bgsave-error", "2").endswith("argument must be 'yes' or 'no'")
        for fixed in ("dir", "dbfilename", "appendfilename", "appenddirname", "auto-aof-rewrite-percentage"):
            assert err(fixed, "x") == (f"CONFIG SET failed (possibly related to argument '{fixed}') - "
                                       "can't set immutable config")
        assert c.config_get("save") == {"save": ""}
        assert c.config_set("save", "900 1 300 10")
        assert c.config_get("save") == {"save": "900 1 300 10"}
        assert c.config_set("save", "")
        assert c.config_get("save") == {"save": ""}
        assert c.config_set("appendfsync", "ALWAYS")
        assert c.config_get("appendfsync") == {"appendfsync": "always"}
        assert c.config_get("dir") == {"dir": str(tmp_path.resolve())}
        assert c.config_get("dbfilename") == {"dbfilename": "dump.kvcg"}
        assert c.config_get("appenddirname") == {"appenddirname": "appendonlydir"}
        assert c.config_get("appendfilename") == {"appendfilename": "appendonly.kvcg"}
        assert c.config_get("auto-aof-rewrite-min-size") == {"auto-aof-rewrite-min-size": str(64 << 20)}
        assert c.config_get("auto-aof-rewrite-percentage") == {"auto-aof-rewrite-percentage": "100"}
    finally:
        srv.stop()


def test_persistence_flags_and_config_file(server_binary, tmp_path):
    def bad(*args):
        p = subprocess.run(server_command(server_binary, ["--dir", str(tmp_path)] + list(args)),
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, p
        return p.stderr

    assert "dbfilename can't be a path, just a filename" in bad("--dbfilename", "a/b")
    assert "appenddirname can't be a path" in bad("--appenddirname", "x/y")
    assert "argument(s) must be one of the following: everysec, always, no" in bad("--appendfsync", "never")
    assert "Invalid save parameters" in bad("--save", "1")
    # redis.conf style: the first "save" line replaces the defaults, later ones add.
    data = tmp_path / "data"
    data.mkdir()
    conf = tmp_path / "kvcg.conf"
    conf.write_text(f'dir {data}\nsave 900 1\nsave 300 10\nappendonly yes\ndbfilename "my.kvcg"\n'
                    'appenddirname "mylog"\nappendfsync always\n')
    srv = ServerProcess(server_binary, [str(conf), "--dir", str(data)])
    try:
        c = srv.client()
        assert c.config_get("save") == {"save": "900 1 300 10"}
        assert c.config_get("appendfsync") == {"appendfsync": "always"}
        c.set("k", "v")
        assert c.execute_command("SAVE") in (b"OK", True)
        assert (data / "my.kvcg").is_file()
        assert (data / "mylog").is_dir() and list((data / "mylog").iterdir())
    finally:
        srv.stop()


def test_stop_writes_on_bgsave_error(server_binary, tmp_path):
    srv, c = start(server_binary, tmp_path, "--save", "3600 1")
    try:
        c.set("before", "1")
        # A directory where the snapshot goes: the rename over it fails (even as root).
        blocker = tmp_path / "dump.kvcg"
        blocker.mkdir()
        (blocker / "keep").write_text("x")
        assert status_reply(srv, "BGSAVE") == "+Background saving started"
        wait_until(lambda: persistence_info(c)["rdb_last_bgsave_status"] == "err", what="the failed bgsave")
        misconf = ("MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to "
                   "disk. Commands that may modify the data set are disabled, because this instance is configured "
                   "to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). "
                   "Please check the Redis logs for details about the RDB error.")

        def refused():
            try:
                c.set("during", "x")
                return False
            except redis.ResponseError as e:
                assert str(e) == misconf
                return True
        wait_until(refused, what="writes to be refused")  # within the 100 ms the server's check may lag
        with pytest.raises(redis.ResponseError, match="MISCONF"):
            c.incr("ctr")
        with pytest.raises(redis.ResponseError, match="MISCONF"):
            c.set("refused", "x")
        assert c.get("before") == b"1"  # reads keep working
        assert c.get("refused") is None and c.get("ctr") is None
        with pytest.raises(redis.ResponseError, match="dump.kvcg"):  # the library's error names the file
            c.execute_command("SAVE")
        # The option off: writes are accepted again; on: refused again.
        assert c.config_set("stop-writes-on-bgsave-error", "no")
        assert c.set("during", "2")
        assert c.config_set("stop-writes-on-bgsave-error", "yes")
        with pytest.raises(redis.ResponseError, match="MISCONF"):
            c.set("during", "3")
        # Fixed: the next successful save lifts the refusal.
        (blocker / "keep").unlink()
        blocker.rmdir()
        assert status_reply(srv, "BGSAVE") == "+Background saving started"
        wait_until(lambda: persistence_info(c)["rdb_last_bgsave_status"] == "ok", what="a good bgsave")
        def accepted():
            try:
                return c.set("during", "4")
            except redis.ResponseError as e:
                assert str(e) == misconf
                return False
        wait_until(accepted, what="writes to be accepted")
        assert c.get("during") == b"4"
    finally:
        srv.stop()
