"""Connection and server commands: PING, ECHO, HELLO/RESP3, AUTH, SELECT,
QUIT, RESET, CLIENT, COMMAND, CONFIG, INFO, TIME."""
import os
import time

import pytest
import redis

from conftest import recv_all, recv_until


def test_ping_echo_select_time(r, server):
    assert r.ping() is True
    s = server.raw()
    s.sendall(b"PING hi\r\nPING\r\n")
    assert recv_until(s, b"PONG\r\n") == b"$2\r\nhi\r\n+PONG\r\n"
    s.close()
    assert r.echo("hello") == "hello"
    assert r.execute_command("SELECT", "0") is True
    with pytest.raises(redis.ResponseError, match="DB index is out of range"):
        r.execute_command("SELECT", "1")
    with pytest.raises(redis.ResponseError, match="value is not an integer"):
        r.execute_command("SELECT", "x")
    secs, usecs = r.time()
    assert secs > 1_600_000_000 and 0 <= usecs < 1_000_000


def test_resp3_client(server):
    c = server.client(protocol=3, decode_responses=True)
    assert c.get("r3-missing") is None
    c.set("r3", "v")
    assert c.get("r3") == "v"
    cfg = c.config_get("appendonly")
    assert cfg == {"appendonly": "no"}
    info = c.info("kvcg")
    assert info["backend"] == "cpu"
    hello = c.execute_command("HELLO", "3")
    assert hello["proto"] == 3 and hello["server"] == "redis"
    assert c.mget("r3", "nope") == ["v", None]
    c.close()


def test_hello_errors(r):
    with pytest.raises(redis.ResponseError, match="unsupported protocol version"):
        r.execute_command("HELLO", "4")
    with pytest.raises(redis.ResponseError, match="Protocol version is not an integer"):
        r.execute_command("HELLO", "x")
    with pytest.raises(redis.ResponseError, match="Syntax error in HELLO option 'bogus'"):
        r.execute_command("HELLO", "2", "bogus")
    hello = r.execute_command("HELLO", "2", "SETNAME", "me")
    assert r.client_getname() == "me"
    assert hello  # RESP2: flat list


def test_client_commands(r, server):
    cid = r.client_id()
    assert isinstance(cid, int) and cid > 0
    assert r.client_getname() is None
    assert r.client_setname("worker-1") is True
    assert r.client_getname() == "worker-1"
    with pytest.raises(redis.ResponseError, match="cannot contain spaces"):
        r.client_setname("has space")
    other = server.client(decode_responses=True)
    other.client_setname("other")
    listing = r.client_list()
    names = {c["name"] for c in listing}
    assert {"worker-1", "other"} <= names
    assert any(int(c["id"]) == cid for c in listing)
    info = r.client_info()
    assert int(info["id"]) == cid and info["name"] == "worker-1"
    with pytest.raises(redis.ResponseError, match="unknown subcommand 'NOPE'. Try CLIENT HELP."):
        r.execute_command("CLIENT", "NOPE")
    assert r.execute_command("CLIENT", "SETINFO", "LIB-NAME", "mylib") == "OK"
    other.close()


def test_command_introspection(r, server):
    n = r.command_count()
    assert n >= 30
    table = r.command()  # parsed by redis-py's COMMAND callback
    assert len(table) == n
    assert table["get"]["arity"] == 2 and "readonly" in table["get"]["flags"]
    assert table["mset"]["first_key_pos"] == 1 and table["mset"]["last_key_pos"] == -1
    assert table["mset"]["step_count"] == 2
    s = server.raw()
    s.sendall(b"COMMAND INFO get nosuch\r\nCOMMAND DOCS get\r\nPING\r\n")
    data = recv_until(s, b"+PONG\r\n")
    s.close()
    assert data.startswith(b"*2\r\n*10\r\n$3\r\nget\r\n:2\r\n")
    assert b"*-1\r\n" in data  # unknown command -> null entry
    assert b"$7\r\nsummary\r\n" in data


def test_config_get_set(r):
    # Redis's persistence defaults (the server's --dir is a fresh temporary one).
    assert r.config_get("save") == {"save": "3600 1 300 100 60 10000"}
    assert r.config_get("appendonly") == {"appendonly": "no"}
    got = r.config_get("max*")
    assert "maxclients" in got and "maxmemory" in got
    assert r.config_set("maxclients", 5000) is True
    assert r.config_get("maxclients") == {"maxclients": "5000"}
    r.config_set("maxclients", 10000)
    with pytest.raises(redis.ResponseError, match="Unknown option"):
        r.config_set("no-such-option", "1")
    with pytest.raises(redis.ResponseError, match="can't set immutable config"):
        r.config_set("port", "1234")  # not changeable at run time
    with pytest.raises(redis.ResponseError, match="CONFIG SET failed"):
        r.config_set("maxclients", "abc")
    with pytest.raises(redis.ResponseError, match="argument must be 'yes' or 'no'"):
        r.config_set("appendonly", "maybe")


def test_info_sections(r):
    r.set("a", "1")
    info = r.info()
    assert info["redis_version"]
    assert info["connected_clients"] >= 1
    assert info["db0"]["keys"] == 1
    k = r.info("kvcg")
    assert k["backend"] == "cpu"
    extra = os.environ.get("KVCG_SERVER_ARGS", "").split()
    # The default mode on the CPU backend is the CPU store alone ("canonical");
    # the paper's names still parse, as deprecated spellings.
    mode = extra[extra.index("--mode") + 1] if "--mode" in extra else "canonical"
    mode = {"gpu-only": "canonical", "cpu-only": "hot-only"}.get(mode, mode)
    assert k["mode"] == mode
    assert k["mode_reason"]
    if mode == "canonical":
        assert k["hot_ops"] == 0 and k["router_model_version"] == "none"
    else:
        assert int(k["hot_ops"]) + int(k["cold_ops"]) > 0
    if mode == "kvcg":
        trainer = extra[extra.index("--router-model") + 1] if "--router-model" in extra else "heavy-hitters"
        assert k["router_trainer"] == trainer
    assert int(k["batches"]) > 0
    stats = r.info("commandstats")
    assert stats["cmdstat_set"]["calls"] >= 1


def test_mode_names_and_default(start_server):
    if "--mode" in os.environ.get("KVCG_SERVER_ARGS", "").split():
        pytest.skip("KVCG_SERVER_ARGS sets the mode already (this test sets its own)")
    srv = start_server("--mode", "cpu-only")  # the paper's name: a deprecated spelling
    c = srv.client(decode_responses=True)
    k = c.info("kvcg")
    assert k["mode"] == "hot-only"
    assert k["mode_reason"] == "mode hot-only was asked for"
    deadline = time.time() + 10  # stderr is drained by a thread
    while not any("mode 'cpu-only' is deprecated, use 'hot-only'" in line for line in srv.stderr_lines):
        assert time.time() < deadline, srv.stderr_lines
        time.sleep(0.02)
    c.close()
    srv.stop()
    srv = start_server("--mode", "canonical")
    assert not any("deprecated" in line for line in srv.stderr_lines)
    srv.stop()
    with pytest.raises(RuntimeError, match="mode"):
        start_server("--mode", "gpu_only")


def test_quit_closes(server):
    s = server.raw()
    s.sendall(b"PING\r\nQUIT\r\nPING\r\n")
    assert recv_all(s) == b"+PONG\r\n+OK\r\n"
    s.close()


def test_reset(server):
    s = server.raw()
    s.sendall(b"HELLO 3 SETNAME x\r\nRESET\r\nCLIENT GETNAME\r\nPING\r\n")
    data = recv_until(s, b"+PONG\r\n")
    s.close()
    # After RESET: RESP2 again (null is $-1) and no name.
    assert data.endswith(b"+RESET\r\n$-1\r\n+PONG\r\n")


def test_inline_commands(server):
    s = server.raw()
    s.sendall(b'SET inl "hello world"\r\nGET inl\nSET q \'it\\\'s\'\r\nGET q\r\n\r\nEXISTS inl q\r\n')
    data = recv_until(s, b":2\r\n")
    s.close()
    assert data == b"+OK\r\n$11\r\nhello world\r\n+OK\r\n$4\r\nit's\r\n:2\r\n"


def test_auth(start_server):
    srv = start_server("--requirepass", "s3cret")
    s = srv.raw()
    s.sendall(b"GET k\r\nAUTH wrong\r\nHELLO 3\r\nAUTH default s3cret\r\nSET k v\r\nGET k\r\n")
    data = recv_until(s, b"$1\r\nv\r\n")
    s.close()
    assert data == (b"-NOAUTH Authentication required.\r\n"
                    b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
                    b"-NOAUTH HELLO must be called with the client already authenticated, otherwise the "
                    b"HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and "
                    b"select the RESP protocol version at the same time\r\n"
                    b"+OK\r\n+OK\r\n$1\r\nv\r\n")
    # redis-py handshakes with HELLO; without the password it cannot connect.
    with pytest.raises(redis.AuthenticationError):
        srv.client().get("k")
    with pytest.raises(redis.AuthenticationError):
        srv.client(password="wrong").get("k")
    authed = srv.client(password="s3cret", decode_responses=True)
    assert authed.get("k") == "v"
    r3 = srv.client(protocol=3, password="s3cret", decode_responses=True)  # HELLO 3 AUTH default ...
    assert r3.get("k") == "v"
    assert r3.get("nope") is None


def test_auth_without_password(r):
    # redis-py maps this error to AuthenticationError.
    with pytest.raises(redis.AuthenticationError, match="without any password configured"):
        r.execute_command("AUTH", "x")


def test_unix_socket(start_server, tmp_path):
    path = str(tmp_path / "kvcg.sock")
    srv = start_server("--unixsocket", path)
    c = redis.Redis(unix_socket_path=path, decode_responses=True, socket_timeout=30)
    assert c.set("u", "1") is True
    assert srv.client(decode_responses=True).get("u") == "1"  # same store over TCP
    assert any(cl["addr"].startswith(path) for cl in c.client_list())
    c.close()


def test_function_flush_and_list(r):
    # No scripting: nothing to flush or list, answered as Redis 7.0 with no functions
    # (Redis's test harness sends FUNCTION FLUSH before each test file).
    assert r.execute_command("FUNCTION", "FLUSH") == "OK"
    assert r.execute_command("FUNCTION", "FLUSH", "async") == "OK"
    assert r.execute_command("FUNCTION", "FLUSH", "SYNC") == "OK"
    assert r.execute_command("FUNCTION", "LIST") == []
    with pytest.raises(redis.ResponseError, match=r"^FUNCTION FLUSH only supports SYNC\|ASYNC option$"):
        r.execute_command("FUNCTION", "FLUSH", "bogus")
    with pytest.raises(redis.ResponseError,
                       match=r"^unknown subcommand or wrong number of arguments for 'flush'\. Try FUNCTION HELP\.$"):
        r.execute_command("FUNCTION", "FLUSH", "SYNC", "x")
    with pytest.raises(redis.ResponseError, match=r"^unknown subcommand 'bogus'\. Try FUNCTION HELP\.$"):
        r.execute_command("FUNCTION", "bogus")
    with pytest.raises(redis.ResponseError, match="not supported"):
        r.execute_command("FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('f', function() end)")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'function' command"):
        r.execute_command("FUNCTION")


def test_stats_count_from_the_last_resetstat_on_every_io_thread(start_server):
    """Counters of all I/O threads start again from 0 at CONFIG RESETSTAT
    and count exactly what came after it (the threads count into their own
    counters; RESETSTAT moves their zero)."""
    srv = start_server()  # two I/O threads (conftest)
    clients = [srv.client(decode_responses=True) for _ in range(4)]  # spread over both loops
    for i, c in enumerate(clients):
        c.set(f"hit{i}", "v")
        for _ in range(25):
            c.get(f"hit{i}")
            c.get(f"miss{i}")
    stats = clients[0].info("stats")
    assert stats["keyspace_hits"] >= 100 and stats["keyspace_misses"] >= 100
    clients[0].config_resetstat()
    stats = clients[1].info("stats")
    assert stats["keyspace_hits"] == 0 and stats["keyspace_misses"] == 0
    assert "cmdstat_get" not in clients[2].info("commandstats")
    for i, c in enumerate(clients):
        for _ in range(3):
            c.get(f"hit{i}")
        c.get(f"miss{i}")
    stats = clients[3].info("stats")
    assert stats["keyspace_hits"] == 12 and stats["keyspace_misses"] == 4
    assert clients[0].info("commandstats")["cmdstat_get"]["calls"] == 16
    for c in clients:
        c.close()


def test_resetstat_under_traffic_never_reads_below_zero(start_server):
    """RESETSTAT while other connections keep counting: a counter read right
    after it is small, never a wrapped-around negative."""
    import threading
    srv = start_server()
    stop = threading.Event()

    def traffic(i):
        c = srv.client()
        c.set(f"t{i}", "v")
        while not stop.is_set():
            p = c.pipeline(transaction=False)
            for _ in range(50):
                p.get(f"t{i}")
            p.execute()
        c.close()

    workers = [threading.Thread(target=traffic, args=(i,)) for i in range(3)]
    for w in workers:
        w.start()
    try:
        admin = srv.client(decode_responses=True)
        for _ in range(30):
            admin.config_resetstat()
            stats = admin.info("stats")
            assert 0 <= stats["keyspace_hits"] < 10_000_000
            assert 0 <= stats["total_commands_processed"] < 10_000_000
        admin.close()
    finally:
        stop.set()
        for w in workers:
            w.join()
