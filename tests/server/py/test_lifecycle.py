"""Start-up errors, SHUTDOWN and SIGTERM: drain in-flight requests, exit 0."""
import os
import signal
import subprocess
import threading

import pytest

from conftest import ServerProcess, recv_until


def test_shutdown_command(server_binary):
    srv = ServerProcess(server_binary, [])
    c = srv.client()
    c.set("k", "v")
    s = srv.raw()
    s.sendall(b"SET a 1\r\nSHUTDOWN\r\n")
    data = recv_until(s, b"never", timeout=30)
    assert data == b"+OK\r\n"
    assert srv.proc.wait(timeout=30) == 0
    srv.stop()  # removes its temporary dir


def test_sigterm_drains_pipelines(server_binary):
    srv = ServerProcess(server_binary, [])
    results = []

    def work():
        c = srv.client()
        p = c.pipeline(transaction=False)
        for i in range(20000):
            p.incr("ctr")
        try:
            out = p.execute()
            results.append(out[-1])
        except Exception as e:  # noqa: BLE001
            results.append(repr(e))

    t = threading.Thread(target=work)
    t.start()
    t.join()
    srv.proc.send_signal(signal.SIGTERM)
    assert srv.proc.wait(timeout=30) == 0
    srv.stop()
    assert results == [20000]


def test_bad_mode_or_backend_is_reported(server_binary):
    p = subprocess.run([server_binary, "--port", "0", "--backend", "bogus"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode != 0 and "invalid value 'bogus'" in p.stderr
    if "--mode" in os.environ.get("KVCG_SERVER_ARGS", ""):
        pytest.skip("KVCG_SERVER_ARGS already sets --mode")
    # Every mode is passed through to Store::Open; a mode the build cannot
    # serve is refused at start-up with the store's reason.
    try:
        srv = ServerProcess(server_binary, ["--mode", "kvcg"])
    except RuntimeError as e:
        assert "cannot start" in str(e) and "invalid_argument" in str(e)
        return
    try:
        info = srv.client(decode_responses=True).info("kvcg")
        assert info["mode"] == "kvcg"
    finally:
        srv.stop()


def test_config_file(server_binary, tmp_path):
    conf = tmp_path / "kvcg.conf"
    conf.write_text('# test\nmaxclients 77\nrequirepass "pw"\nsave ""\nappendonly no\nbackend cpu\n')
    srv = ServerProcess(server_binary, [str(conf)])
    try:
        c = srv.client(password="pw", decode_responses=True)
        assert c.config_get("maxclients") == {"maxclients": "77"}
    finally:
        srv.stop()
    bad = tmp_path / "bad.conf"
    bad.write_text("nosuchoption 1\n")
    p = subprocess.run([server_binary, str(bad)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "unknown option 'nosuchoption'" in p.stderr
