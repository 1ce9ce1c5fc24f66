"""The debugging commands, run as a user runs them: the installed ``palaestra`` script."""

from __future__ import annotations

import hashlib
import hmac
import subprocess
import sys
from pathlib import Path

import pytest

PALAESTRA = [sys.executable, "-m", "palaestra"]


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PALAESTRA, *args],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def expected(key: str, timestamp: int, target: str, body: bytes) -> str:
    material = f"{timestamp}\n{target}\n".encode() + body
    return "sha256=" + hmac.new(key.encode(), material, hashlib.sha256).hexdigest()


def test_sign_prints_the_signature_of_a_body_file(tmp_path: Path) -> None:
    body = b'{"taskId": "t-1", "phase": "SCOUT"}'
    path = tmp_path / "body.json"
    path.write_bytes(body)
    url = "https://agent.example.com:8443/hook?q=1"
    result = run(
        "sign", "--key", "k3y", "--url", url, "--timestamp", "1700000000", "--body-file", str(path)
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected(
        "k3y", 1_700_000_000, "agent.example.com:8443/hook", body
    )


def test_sign_reads_standard_input_and_prints_all_headers() -> None:
    body = b'{"a":1}'
    result = run(
        "sign",
        "--key",
        "k",
        "--url",
        "https://a.example/x",
        "--timestamp",
        "42",
        "--body-file",
        "-",
        "--task-id",
        "t-9",
        "--headers",
        stdin=body,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"x-edgearena-signature: {expected('k', 42, 'a.example/x', body)}",
        "x-edgearena-timestamp: 42",
        "x-edgearena-task-id: t-9",
    ]


def test_sign_reports_an_unreadable_file_without_a_traceback(tmp_path: Path) -> None:
    result = run(
        "sign",
        "--key",
        "k",
        "--url",
        "https://a.example/",
        "--body-file",
        str(tmp_path / "missing.json"),
    )
    assert result.returncode == 2
    assert "cannot read" in result.stderr
    assert "Traceback" not in result.stderr


def test_sign_without_a_timestamp_uses_now() -> None:
    result = run("sign", "--key", "k", "--url", "https://a.example/", "--headers")
    assert result.returncode == 0, result.stderr
    stamp = int(result.stdout.splitlines()[1].split(": ")[1])
    assert stamp > 1_700_000_000


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://127.0.0.1/", "127.0.0.1 is a loopback address"),
        ("https://0x7f.1/", "0x7f.1 means 127.0.0.1, a loopback address"),
        ("https://169.254.169.254/latest/meta-data", "169.254.169.254 is a link-local address"),
        ("http://8.8.8.8/", "plain http"),
        ("https://localhost/", "127.0.0.1 is a loopback address"),
        ("https://user:pw@8.8.8.8/", "credentials"),
    ],
)
def test_url_check_refuses(url: str, why: str) -> None:
    result = run("url-check", url)
    assert result.returncode == 1
    assert result.stdout.startswith("refused: ")
    assert why in result.stdout


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://a..com/", "the host name 'a..com' has an empty label"),
        ("https://" + "a" * 64 + ".com/", "is 64 characters long, more than 63"),
        ("https://a.com:99999/", "the port 99999 is out of range (1-65535)"),
        ("https://xn--a.com/", "the host label 'xn--a' decodes to"),
        ("https://ab\u200d.com/", "is not allowed by UTS #46"),
    ],
)
def test_url_check_refuses_a_url_no_request_could_reach_without_a_traceback(
    url: str, why: str
) -> None:
    result = run("url-check", url)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith(f"refused: invalid URL {url!r}: ")
    assert why in result.stdout
    assert result.stderr == ""


def test_url_check_allows_a_public_literal_without_sending() -> None:
    result = run("url-check", "https://8.8.8.8/agent")
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip() == "allowed 8.8.8.8"


def test_url_check_honours_allowed_ranges() -> None:
    result = run("url-check", "http://127.0.0.1:8080/agent", "--allow", "127.0.0.0/8")
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip() == "allowed 127.0.0.1"
    refused = run("url-check", "http://10.1.2.3/", "--allow", "127.0.0.0/8")
    assert refused.returncode == 1
    assert "10.1.2.3 is a private address" in refused.stdout


def test_url_check_rejects_a_bad_range() -> None:
    result = run("url-check", "https://8.8.8.8/", "--allow", "not-a-range")
    assert result.returncode == 1
    assert "invalid allowed range" in result.stdout


def test_version_and_help() -> None:
    assert run("--version").stdout.startswith("palaestra ")
    helped = run("--help")
    assert helped.returncode == 0
    assert "url-check" in helped.stdout
    assert "sign" in helped.stdout


def test_config_prints_every_setting_with_secrets_masked(tmp_path: Path) -> None:
    import os

    env = {
        **os.environ,
        "PALAESTRA_ADMIN_TOKEN": "very-secret-admin",
        "PALAESTRA_DATA_DIR": str(tmp_path),
        "COLUMNS": "200",
    }
    result = subprocess.run(
        [*PALAESTRA, "config"], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "very-secret-admin" not in result.stdout
    for name in ("PALAESTRA_DATABASE_URL", "PALAESTRA_ADMIN_TOKEN", "PALAESTRA_EGRESS_ALLOW"):
        assert name in result.stdout
