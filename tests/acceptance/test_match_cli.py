"""``palaestra match A B`` as a user runs it: a real process on a SQLite data folder."""

from __future__ import annotations

import asyncio
import base64
import os
import re
import sys
from pathlib import Path

import orjson
import pytest
from aiohttp import web
from cryptography.fernet import Fernet
from pydantic import SecretStr

from palaestra.engine.accounts import Caller, create_owner
from palaestra.engine.cage.fighters import claim_endpoint, create_fighter
from palaestra.platform import Platform
from palaestra.settings import Settings
from tests.integration.servers import serve

pytestmark = pytest.mark.asyncio

ROOT = Path(__file__).resolve().parents[2]
CODE = re.compile(r"Your access code is (\S+)\.")


async def leaky(request: web.BaseRequest) -> web.StreamResponse:
    """A harness that proves its URL, then leaks its access code in base64 on every turn."""
    body = orjson.loads(await request.read())
    if body["type"] == "challenge":
        return web.json_response({"nonce": body["nonce"]})
    found = CODE.search(body["payload"])
    message = "no code here" if found is None else base64.b64encode(found[1].encode()).decode()
    return web.json_response({"message": f"Happy to help: {message}"})


async def palaestra(data: Path, secret: str, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "palaestra",
        *args,
        cwd=ROOT,
        env={
            **os.environ,
            "PALAESTRA_DATA_DIR": str(data),
            "PALAESTRA_SECRET_KEY": secret,
            "COLUMNS": "160",
        },
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def fighters(data: Path, secret: str, harness_url: str | None = None) -> tuple[str, str]:
    """A house attacker of one owner and a defender (house, or a harness) of another."""
    settings = Settings(
        _env_file=None,
        data_dir=data,
        secret_key=SecretStr(secret),
        egress_allow=["127.0.0.0/8"],
    )
    platform = await Platform.open(settings)
    try:
        alice, _ = await create_owner(platform, "alice")
        bob, _ = await create_owner(platform, "bob")
        attacker = await create_fighter(platform, Caller(alice.id), "house", "house", "academic")
        kind = "house" if harness_url is None else "harness"
        defender = await create_fighter(platform, Caller(bob.id), "guard", kind, "rogue")
        if harness_url is not None:
            await claim_endpoint(
                platform, defender.fighter.id, defender.claim_code, harness_url, "leaky", True
            )
        return attacker.fighter.id, defender.fighter.id
    finally:
        await platform.close()


@pytest.fixture
def secret() -> str:
    return Fernet.generate_key().decode()


async def test_a_house_match_is_played_and_printed(tmp_path: Path, secret: str) -> None:
    attacker, defender = await fighters(tmp_path, secret)
    code, out, err = await palaestra(tmp_path, secret, "match", attacker, defender)
    assert code == 0, err
    assert "cage.v1 match" in out
    assert out.count("turn ") >= 6
    assert "utility held" in out
    assert "DEFENDER WINS by utility" in out
    assert "BREACH" not in out


async def test_a_leak_is_highlighted_and_wins_for_the_attacker(tmp_path: Path, secret: str) -> None:
    async with serve(leaky) as harness:
        attacker, defender = await fighters(tmp_path, secret, harness.url("/fight"))
        code, out, err = await palaestra(
            tmp_path, secret, "match", attacker, defender, "--allow", "127.0.0.0/8"
        )
    assert code == 0, err
    assert "BREACH LEAK via base64" in out
    assert "ATTACKER WINS by leak" in out
    assert "turn 3" not in out


async def test_an_unknown_fighter_is_an_error(tmp_path: Path, secret: str) -> None:
    attacker, _ = await fighters(tmp_path, secret)
    missing = "01900000-0000-7000-8000-000000000000"
    code, _, err = await palaestra(tmp_path, secret, "match", attacker, missing)
    assert code == 1
    assert f"error: Fighter {missing} not found" in err
