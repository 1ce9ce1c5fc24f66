"""The generated reference covers every setting, route, command, wire model and metric."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest
import typer.main

from palaestra.cli import app as cli_app
from palaestra.metrics import Metrics
from palaestra.protocol import Phase
from palaestra.protocol.output_json_schemas import accepted_output_schema, output_json_schema
from palaestra.rules.status import Status
from palaestra.settings import Settings

HOOK = Path(__file__).resolve().parents[2] / "docs" / "hooks" / "reference.py"


@pytest.fixture(scope="module")
def hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference_hook", HOOK)
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_setting_is_in_the_table_with_its_description(hook: ModuleType) -> None:
    page = hook.settings_page()
    for name, field in Settings.model_fields.items():
        row = next(line for line in page.splitlines() if f"`PALAESTRA_{name.upper()}`" in line)
        assert (field.description or "").split(".")[0].replace("|", "\\|") in row


def test_every_command_has_a_section(hook: ModuleType) -> None:
    page = hook.cli_page()
    root = typer.main.get_command(cli_app)
    paths = ["palaestra"]
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        paths.append(f"palaestra {name}")
        paths += [f"palaestra {name} {sub}" for sub in getattr(command, "commands", {})]
    for path in paths:
        assert f"## `{path}`" in page
    # Options are listed with their type and help (typer names a list option's type
    # `list[str]` from 0.28 on, `str` before: either is the option documented).
    assert re.search(r"\| `--allow <(list\[str\]|str)>` \| Egress range to allow", page)


def test_every_route_of_the_openapi_document_is_listed(hook: ModuleType) -> None:
    document = hook.openapi_document()
    page = hook.http_page()
    assert "/api/agents" in document["paths"]
    for path, item in document["paths"].items():
        for method in item:
            assert f"## {method.upper()} `{path}`" in page
    for name in document["components"]["schemas"]:
        assert f"### {name} {{ #{name.lower()} }}" in page
    paged = [
        "/api/agents",
        "/api/agents/{agent_id}/history",
        "/api/runs",
        "/api/matches",
        "/api/leaderboard/live",
    ]
    lists = [
        path
        for path, item in document["paths"].items()
        if item.get("get", {})
        .get("responses", {})
        .get("200", {})
        .get("content", {})
        .get("application/json", {})
        .get("schema", {})
        .get("type")
        == "array"
    ]
    assert sorted(lists) == sorted(paged)  # every list the API answers comes a page at a time
    for path in [*paged, "/api/leaderboard"]:
        headers = document["paths"][path]["get"]["responses"]["200"]["headers"]
        assert set(headers) == {"Link", "X-Next-Cursor"}
        section = page.split(f"## GET `{path}`", 1)[1].split("\n## ", 1)[0]
        assert "- 200 header `X-Next-Cursor`" in section
        assert "`cursor`" in section


def test_every_wire_model_has_its_json_schema(hook: ModuleType) -> None:
    page = hook.wire_page()
    names = {model.__name__ for model in hook.wire_models()}
    assert {"DispatchPayload", "HandshakeReply", "TurnRequest", "ChallengeRequest"} <= names
    for name in names:
        assert f"## {name}\n" in page
    assert '"taskId"' in page  # the wire's names, not the attributes'


def test_every_metric_is_listed_with_its_labels(hook: ModuleType) -> None:
    page = hook.metrics_page()
    families = list(Metrics().registry.collect())
    assert len(families) >= 10
    for family in families:
        assert f"`{family.name}" in page
    # The labels are read off the collectors: this fails if prometheus_client moves them.
    assert "| `palaestra_jobs_total` | counter | `job`, `outcome` |" in page


def test_the_status_diagram_has_every_status_and_the_thresholds(hook: ModuleType) -> None:
    diagram = hook.status_machine_diagram()
    for status in Status:
        assert f"{status.value} -->" in diagram
    assert "ACTIVE --> DEGRADED: failure, 3 in a row" in diagram
    assert "SUSPENDED --> ACTIVE: verified" in diagram


def test_the_grafana_dashboard_charts_every_metric_by_its_exposed_name(hook: ModuleType) -> None:
    dashboard = json.loads(json.dumps(hook.grafana_dashboard()))  # plain JSON all through
    # What Prometheus stores: a counter as _total, a histogram as _bucket/_sum/_count.
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    exposed = {
        family.name + suffix
        for family in Metrics().registry.collect()
        for suffix in suffixes[family.type]
    }
    charted = []
    for panel in dashboard["panels"]:
        (target,) = panel["targets"]
        names = re.findall(r"palaestra_[a-z_]+", target["expr"])
        assert names, target
        assert set(names) <= exposed, target["expr"]
        charted.append(panel["title"])
    assert sorted(charted) == sorted(family.name for family in Metrics().registry.collect())
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    assert '"palaestra_jobs_total' not in json.dumps(dashboard)  # counters are rated, never raw
    rated = next(p for p in dashboard["panels"] if p["title"] == "palaestra_jobs")
    assert rated["targets"][0]["expr"] == "sum by (job, outcome) (rate(palaestra_jobs_total[5m]))"


def test_every_role_output_is_rendered_as_json_schema_from_the_code(hook: ModuleType) -> None:
    page = hook.wire_page()
    for phase in Phase:
        section = page.split(f"#### {phase.value.title()} output", 1)[1].split("\n#### ", 1)[0]
        accepted, generated = re.findall(r"```json\n(.*?)\n *```", section, re.DOTALL)
        assert json.loads(accepted) == accepted_output_schema(phase)
        narrow = "\n".join(line.removeprefix("    ") for line in generated.splitlines())
        assert json.loads(narrow) == output_json_schema(phase)
    # The block is built from the tables: a key added to a rule shows up with no hand edit.
    assert '"why_now"' in page
    assert '"evidence_quality_score"' in page
