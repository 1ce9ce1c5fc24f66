"""``palaestra run "goal"``: start an edgearena run on a server and follow it to its report.

The command is a client of a running platform (``palaestra serve``), over its
HTTP API with an owner's or the admin's token: the run is driven by the
server, where agents' async completions land, and the command shows its
progress live, then prints the ranked report. ``--json`` prints the final run
as JSON instead.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Annotated, Any

import aiohttp
import orjson
import typer
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from palaestra.cli.app import app
from palaestra.cli.common import fail
from palaestra.rules.producers import producer_label
from palaestra.rules.runs.runflow import RunStatus, TaskStatus

__all__ = ["render_progress", "render_report", "run"]

_POLL_S = 0.5


@app.command()
def run(
    goal: Annotated[str, typer.Argument(help="What the run should find, in plain words.")],
    launchpad: Annotated[str, typer.Option(help="The launchpad preset.")] = "make-money",
    url: Annotated[
        str,
        typer.Option(envvar="PALAESTRA_API_URL", help="The platform's base URL."),
    ] = "http://127.0.0.1:8000",
    token: Annotated[
        str | None,
        typer.Option(
            envvar="PALAESTRA_TOKEN",
            show_default=False,
            help="An owner's token (or the admin token).",
        ),
    ] = None,
    scouts: Annotated[
        int | None, typer.Option(help="SCOUT slots (default: the launchpad's).")
    ] = None,
    shortlist: Annotated[
        int | None, typer.Option(help="Candidates kept after scouting (default: the launchpad's).")
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the final run as JSON.")
    ] = False,
    wait: Annotated[
        float, typer.Option(help="Give up waiting for the report after this many seconds.")
    ] = 900.0,
) -> None:
    """Start a run on the platform, show its progress live, then print the ranked report."""
    if not token:
        fail("a token is required: --token or PALAESTRA_TOKEN (an owner's or the admin's)")
    sizes = {k: v for k, v in {"scouts": scouts, "shortlist": shortlist}.items() if v is not None}
    body: dict[str, Any] = {"goal": goal, "launchpad": launchpad}
    if sizes:
        body["sizes"] = sizes
    final = asyncio.run(_follow(url.rstrip("/"), token, body, json_output, wait))
    if json_output:
        sys.stdout.buffer.write(orjson.dumps(final) + b"\n")
    else:
        Console().print(render_report(final))
    raise typer.Exit(0 if final.get("status") == RunStatus.COMPLETED else 1)


async def _follow(
    base: str, token: str, body: dict[str, Any], quiet: bool, within_s: float
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(headers=headers) as session:
        started = await _call(session, "POST", f"{base}/api/runs", body)
        run_id = started["run_id"]
        console = Console(stderr=True, quiet=quiet)
        limit = time.monotonic() + within_s
        detail = await _call(session, "GET", f"{base}/api/runs/{run_id}")
        with Live(render_progress(detail), console=console, transient=True) as live:
            while detail["status"] == RunStatus.RUNNING:
                if time.monotonic() > limit:
                    fail(f"run {run_id} still running after {within_s:g}s; see /api/runs/{run_id}")
                await asyncio.sleep(_POLL_S)
                detail = await _call(session, "GET", f"{base}/api/runs/{run_id}")
                live.update(render_progress(detail))
        return detail


async def _call(
    session: aiohttp.ClientSession, method: str, url: str, body: Any = None
) -> dict[str, Any]:
    try:
        async with session.request(method, url, json=body) as response:
            raw = await response.read()
            status = response.status
    except aiohttp.ClientError as exc:
        fail(f"cannot reach the platform at {url}: {exc}")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        fail(f"{method} {url} answered {status} with a body that is not JSON")
    if status >= 400:
        message = data.get("error") if isinstance(data, dict) else None
        fail(f"{method} {url} answered {status}: {message or data}")
    if not isinstance(data, dict):
        fail(f"{method} {url} answered with {type(data).__name__}, not an object")
    return data


_STYLE = {
    TaskStatus.SUCCEEDED: "green",
    TaskStatus.RUNNING: "yellow",
    TaskStatus.FAILED: "red",
    TaskStatus.TIMEOUT: "red",
    "done": "green",
    "running": "yellow",
    "pending": "dim",
}


def render_progress(detail: dict[str, Any]) -> Group:
    """The live view: one row per phase, then the latest tasks."""
    phases = Table(title=f"run {detail['run_id']}: {detail['goal']}", title_justify="left")
    for column in ("phase", "status", "done", "running", "failed", "re-routed"):
        phases.add_column(column, justify="left" if column in ("phase", "status") else "right")
    for row in detail["phases"]:
        phases.add_row(
            row["phase"],
            Text(row["status"], style=_STYLE.get(row["status"], "")),
            f"{row['done']}/{row['slots']}",
            str(row["running"]),
            str(row["failed"]),
            str(row["rerouted"]),
        )
    tasks = Table(title="latest tasks", title_justify="left")
    for column in ("phase", "slot", "try", "executor", "answered by", "status", "reason"):
        tasks.add_column(column, overflow="fold" if column == "reason" else "ellipsis")
    for task in detail["tasks"][-8:]:
        tasks.add_row(
            task["phase"],
            str(task["slot"]),
            str(task["attempt"]),
            task["executor"],
            producer_label(task.get("producer"), task.get("model_id")),
            Text(task["status"], style=_STYLE.get(task["status"], "")),
            task["reason"] or "",
        )
    return Group(phases, tasks)


def render_report(detail: dict[str, Any]) -> Group:
    """The final report: the ranking, eliminations, the rest, and what the run cost."""
    report = detail.get("report") or {}
    parts: list[Any] = [
        Text(f"Run {detail['run_id']} {detail['status']}: {detail['goal']}", style="bold")
    ]
    ranking = Table(title="ranking", title_justify="left")
    for column in ("#", "score", "candidate", "scout", "verify", "adj.", "pen.", "tasks"):
        ranking.add_column(column, overflow="fold" if column == "candidate" else "ellipsis")
    for row in report.get("ranking", []):
        parts_ = row["components"]
        ranking.add_row(
            str(row["rank"]),
            f"{row['score']:.1f}",
            f"{row['title']}\n[dim]{row.get('target_customer') or ''}[/dim]",
            f"{parts_['scout_quality']:.0f}",
            f"{parts_['verification']:.0f}",
            f"{parts_['adjustments']:+.0f}",
            f"{parts_['penalties']:.0f}",
            str(len(row["tasks"])),
        )
    parts.append(ranking)
    for row in report.get("eliminated", []):
        parts.append(Text(f"eliminated: {row['title']}: {row['reason']}", style="red"))
    for row in report.get("not_shortlisted", []):
        why = "merged into a near-duplicate" if row.get("merged_into") else "below the shortlist"
        parts.append(Text(f"not shortlisted ({why}): {row['title']}", style="dim"))
    counts = report.get("tasks", {})
    if counts:
        parts.append(
            Text(
                f"{counts.get('total', 0)} tasks: {counts.get('succeeded', 0)} succeeded, "
                f"{counts.get('failed', 0)} failed, {counts.get('timeout', 0)} timed out, "
                f"{counts.get('rerouted', 0)} re-routed, {counts.get('house', 0)} by the house"
            )
        )
    if report.get("score_formula"):
        parts.append(Text(f"score: {report['score_formula']}", style="dim"))
    parts.append(Text(f"details: GET /api/runs/{detail['run_id']}", style="dim"))
    return Group(*parts)
