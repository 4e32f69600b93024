"""`memlab mcp serve`: argument checks, and a real server process on loopback stopped with SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from memlab.cli.main import main
from memlab.testing import free_port


def test_user_flag_rules(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    assert main(["mcp", "serve", "memory", "--transport", "stdio", "--db", db]) == 1
    assert "--user is required" in capsys.readouterr().err
    assert main(["mcp", "serve", "memory", "--user", "alice", "--db", db]) == 1
    assert "--user is for stdio only" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["mcp", "serve", "web"])
    assert "invalid choice: 'web'" in capsys.readouterr().err


@pytest.mark.subprocess
def test_datetime_server_process_serves_health_and_stops_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "memlab.cli.main", "mcp", "serve", "datetime", "--port", str(port),
                             "--log-level", "info"], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        body = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                body = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).json()
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        assert body is not None, proc.stderr.read() if proc.poll() is not None else "no answer in 60 s"
        assert body["status"] == "ok" and body["tools"] == ["now"]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    # uvicorn re-raises the SIGTERM it handled once shutdown is complete, so -SIGTERM is a clean exit here
    assert proc.returncode in (0, -signal.SIGTERM) and "Traceback" not in err, err[-2000:]
    assert "Application shutdown complete" in err
    assert f"ws://127.0.0.1:{port}/mcp" in err
