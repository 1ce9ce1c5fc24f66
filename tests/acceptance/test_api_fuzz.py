"""The API's contract, fuzzed: Schemathesis against a real ``palaestra serve``.

Every check Schemathesis has (no server error, every status and content type
declared, schema-valid requests accepted, schema-invalid ones refused, 405 with
``Allow``, responses matching their schemas), as the admin and as an owner, with
the fixed seed and the bounded examples of ``schemathesis.toml``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.acceptance.test_serve_restart import free_port

ADMIN = "pa_admin_contract_fuzz_0123456789abcdef"
CONFIG = Path(__file__).with_name("schemathesis.toml")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("contract")
    port = free_port()
    env = {
        **os.environ,
        "PALAESTRA_DATA_DIR": str(data),
        "PALAESTRA_ADMIN_TOKEN": ADMIN,
        "PALAESTRA_LOG_LEVEL": "WARNING",
    }
    with (data / "serve.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "palaestra", "serve", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=log,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=2) as response:  # noqa: S310
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert process.poll() is None, (data / "serve.log").read_text()
            assert time.monotonic() < deadline, "palaestra serve did not come up"
            time.sleep(0.1)
        yield base
        assert process.poll() is None, (
            "serve died under the fuzzer\n"
            + (data / "serve.log").read_text(errors="replace")[-4000:]
        )
    finally:
        process.terminate()
        process.wait(timeout=20)


def owner_token(base: str) -> str:
    request = urllib.request.Request(  # noqa: S310 (our own server, on loopback)
        base + "/api/owners",
        data=json.dumps({"name": "fuzzed"}).encode(),
        headers={"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        token: str = json.loads(response.read())["token"]
    return token


@pytest.mark.parametrize("who", ["admin", "owner"])
def test_every_operation_keeps_its_contract(served: str, who: str, tmp_path: Path) -> None:
    schemathesis = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    assert schemathesis is not None, "schemathesis is in the dev dependencies"
    token = ADMIN if who == "admin" else owner_token(served)
    result = subprocess.run(
        [
            schemathesis,
            "--config-file",
            str(CONFIG),
            "run",
            served + "/openapi.json",
            "--checks",
            "all",
            "--header",
            f"Authorization: Bearer {token}",
            "--no-color",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # its cache of found failures stays out of the checkout
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-12000:] + result.stderr[-2000:]
    assert "Server error" not in result.stdout
