"""The Reference pages, generated from the code at every build (a MkDocs hook).

Nothing here is copied text: the settings table reads the settings model, the CLI page
walks the Typer application, the HTTP page renders the app's own OpenAPI document and
the wire page the pydantic models of ``palaestra.protocol`` (and the role output tables
the schema checker reads). A change to any of them changes the docs with no hand edit.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

#: Generated page -> function producing its Markdown.
PAGES = {
    "reference/settings.md": "settings_page",
    "reference/cli.md": "cli_page",
    "reference/http.md": "http_page",
    "reference/wire.md": "wire_page",
    "reference/metrics.md": "metrics_page",
}

_GENERATED = "*This page is generated from the code when the site is built; do not edit it.*"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def _fence(value: Any) -> str:
    return "```json\n" + json.dumps(value, indent=2, sort_keys=False) + "\n```"


# -- settings ------------------------------------------------------------------------------


def settings_page() -> str:
    from pydantic_core import PydanticUndefined

    from palaestra.settings import Settings

    lines = [
        "# Settings",
        "",
        _GENERATED,
        "",
        "Every setting is an environment variable prefixed `PALAESTRA_`; a `.env` file in",
        "the working folder is honoured. `palaestra config` prints the effective values,",
        "secrets masked.",
        "",
        "| variable | default | meaning |",
        "|---|---|---|",
    ]
    for name, field in Settings.model_fields.items():
        default = field.default
        if default is PydanticUndefined or default is None:
            shown = "(unset)"
        elif isinstance(default, list | tuple):
            shown = ",".join(str(item) for item in default) or "(none)"
        else:
            shown = str(default)
        lines.append(
            f"| `PALAESTRA_{name.upper()}` | `{_cell(shown)}` | {_cell(field.description or '')} |"
        )
    return "\n".join(lines) + "\n"


# -- metrics -------------------------------------------------------------------------------


def metrics_page() -> str:
    from palaestra.metrics import Metrics

    lines = [
        "# Metrics",
        "",
        _GENERATED,
        "",
        "`GET /metrics` on every `palaestra serve` process, and `palaestra worker",
        "--metrics-port PORT` on each worker, serve these in Prometheus' text format.",
        "Counters are exposed with the `_total` suffix; a histogram as its `_bucket`,",
        "`_sum` and `_count` series.",
        "",
        "| metric | type | labels | meaning |",
        "|---|---|---|---|",
    ]
    from prometheus_client.metrics import MetricWrapperBase

    for metric in vars(Metrics()).values():
        if not isinstance(metric, MetricWrapperBase):
            continue
        # prometheus_client keeps a family's label names only here (no public reader);
        # tests/unit/test_docs_reference.py fails if that changes.
        labels = ", ".join(f"`{label}`" for label in getattr(metric, "_labelnames", ()))
        (family,) = metric.describe()
        name = f"{family.name}_total" if family.type == "counter" else family.name
        lines.append(f"| `{name}` | {family.type} | {labels} | {_cell(family.documentation)} |")
    lines += [
        "",
        "[A Grafana dashboard](grafana-dashboard.json) with a panel for each of these (rates",
        "of the counters, the gauges, the 99th percentile of the ping lag) is generated with",
        "this page: import it in Grafana (*Dashboards, New, Import*) and pick the Prometheus",
        "data source that scrapes Palaestra.",
    ]
    return "\n".join(lines) + "\n"


def grafana_dashboard() -> dict[str, Any]:
    """A Grafana dashboard (importable JSON) with one panel per metric of the registry."""
    from prometheus_client.metrics import MetricWrapperBase

    from palaestra.metrics import Metrics

    datasource = {"type": "prometheus", "uid": "${datasource}"}
    panels: list[dict[str, Any]] = []
    for metric in vars(Metrics()).values():
        if not isinstance(metric, MetricWrapperBase):
            continue
        (family,) = metric.describe()
        labels = ", ".join(getattr(metric, "_labelnames", ()))
        by = f" by ({labels})" if labels else ""
        if family.type == "counter":
            expr = f"sum{by} (rate({family.name}_total[5m]))"
            unit = "ops"
        elif family.type == "histogram":
            expr = f"histogram_quantile(0.99, sum by (le) (rate({family.name}_bucket[5m])))"
            unit = "s"
        else:
            expr = f"sum{by} ({family.name})"
            unit = "short"
        index = len(panels)
        panels.append(
            {
                "id": index + 1,
                "type": "timeseries",
                "title": family.name,
                "description": family.documentation,
                "datasource": datasource,
                "gridPos": {"h": 8, "w": 12, "x": 12 * (index % 2), "y": 8 * (index // 2)},
                "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
                "targets": [
                    {
                        "refId": "A",
                        "datasource": datasource,
                        "expr": expr,
                        "legendFormat": " ".join(f"{{{{{name}}}}}" for name in labels.split(", "))
                        if labels
                        else family.name,
                    }
                ],
            }
        )
    return {
        "__inputs": [
            {
                "name": "datasource",
                "label": "Prometheus",
                "type": "datasource",
                "pluginId": "prometheus",
                "pluginName": "Prometheus",
            }
        ],
        "title": "Palaestra",
        "uid": "palaestra",
        "tags": ["palaestra"],
        "timezone": "utc",
        "schemaVersion": 39,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "label": "Prometheus",
                    "type": "datasource",
                    "query": "prometheus",
                }
            ]
        },
        "panels": panels,
    }


# -- CLI -----------------------------------------------------------------------------------


def _commands(command: Any, ctx: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    yield path, command, ctx
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        sub_ctx = type(ctx)(sub, info_name=name, parent=ctx)
        yield from _commands(sub, sub_ctx, f"{path} {name}")


def cli_page() -> str:
    import typer.main

    from palaestra.cli import app

    root = typer.main.get_command(app)
    context_type = type(root.make_context("palaestra", [], resilient_parsing=True))
    lines = ["# Command line", "", _GENERATED, ""]
    for path, command, ctx in _commands(
        root, context_type(root, info_name="palaestra"), "palaestra"
    ):
        lines += [f"## `{path}`", "", _cell(command.help or ""), ""]
        lines += ["```", command.get_usage(ctx), "```", ""]
        rows = [p.get_help_record(ctx) for p in command.params]
        rows = [row for row in rows if row is not None]
        if rows:
            lines += ["| argument or option | meaning |", "|---|---|"]
            lines += [f"| `{_cell(opts)}` | {_cell(meaning)} |" for opts, meaning in rows]
            lines.append("")
    return "\n".join(lines) + "\n"


# -- HTTP API ------------------------------------------------------------------------------


def openapi_document() -> dict[str, Any]:
    from palaestra.app import create_app
    from palaestra.settings import Settings

    with tempfile.TemporaryDirectory() as folder:  # the app is built, never started
        document: dict[str, Any] = create_app(Settings(data_dir=Path(folder))).openapi()
    return document


def _schema_name(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[`{name}`](#{name.lower()})"
    if schema.get("type") == "array" and "items" in schema:
        return f"array of {_schema_name(schema['items'])}"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_schema_name(option) for option in schema[key])
    return f"`{schema.get('type', 'any')}`"


def http_page() -> str:
    document = openapi_document()
    lines = [
        "# HTTP API",
        "",
        _GENERATED,
        "",
        f"{document['info']['title']} {document['info']['version']}: "
        f"{document['info'].get('description', '')} A running server serves the same",
        "document at `/openapi.json` and an interactive view at `/docs`.",
        "",
        "| method | path | summary |",
        "|---|---|---|",
    ]
    operations = [
        (path, method, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
    ]
    for path, method, operation in operations:
        anchor = operation["operationId"].lower()
        summary = _cell(operation.get("summary", ""))
        lines.append(f"| {method.upper()} | [`{path}`](#{anchor}) | {summary} |")
    lines.append("")
    for path, method, operation in operations:
        anchor = operation["operationId"].lower()
        lines += [f"## {method.upper()} `{path}` {{ #{anchor} }}", ""]
        if operation.get("description"):
            lines += [operation["description"], ""]
        parameters = operation.get("parameters", [])
        if parameters:
            lines += ["| parameter | in | type | required | meaning |", "|---|---|---|---|---|"]
            for parameter in parameters:
                lines.append(
                    f"| `{parameter['name']}` | {parameter['in']} "
                    f"| {_schema_name(parameter.get('schema', {}))} "
                    f"| {'yes' if parameter.get('required') else 'no'} "
                    f"| {_cell(parameter.get('description', ''))} |"
                )
            lines.append("")
        body = operation.get("requestBody", {}).get("content", {})
        for media, content in body.items():
            lines += [f"Request body (`{media}`): {_schema_name(content.get('schema', {}))}", ""]
        lines += ["| status | meaning | body |", "|---|---|---|"]
        for status, response in operation.get("responses", {}).items():
            schema = response.get("content", {}).get("application/json", {}).get("schema")
            shown = _schema_name(schema) if schema else ""
            lines.append(f"| {status} | {_cell(response.get('description', ''))} | {shown} |")
        lines.append("")
        for status, response in operation.get("responses", {}).items():
            for header, about in response.get("headers", {}).items():
                lines.append(f"- {status} header `{header}`: {_cell(about.get('description', ''))}")
        lines.append("")
    lines += ["## Schemas", ""]
    for name, schema in document.get("components", {}).get("schemas", {}).items():
        lines += [f"### {name} {{ #{name.lower()} }}", "", _fence(schema), ""]
    return "\n".join(lines) + "\n"


# -- wire ----------------------------------------------------------------------------------


def wire_models() -> list[type[BaseModel]]:
    """Every message model of both protocols: each public subclass of the wire's base model."""
    import palaestra.protocol  # noqa: F401 (imports every message module)
    from palaestra.protocol.models import WireModel

    found: list[type[BaseModel]] = []
    pending = list(WireModel.__subclasses__())
    while pending:
        model = pending.pop(0)
        pending.extend(model.__subclasses__())
        if not model.__name__.startswith("_") and model not in found:
            found.append(model)
    return sorted(found, key=lambda model: (model.__module__, model.__name__))


def _rules(rules: Any) -> str:
    return ", ".join(f"`{key}` ({kind})" for key, kind in rules)


def wire_page() -> str:
    from palaestra.protocol import schema_tables as tables

    lines = [
        "# Wire messages",
        "",
        _GENERATED,
        "",
        "The JSON Schema of every message of edgearena-v1 and cage.v1, as the pydantic",
        "models of `palaestra.protocol` define it. Both the platform and the agent SDK",
        "parse and build messages with these models. Field names are the wire's",
        "(camelCase where the protocol says so).",
        "",
    ]
    for model in wire_models():
        doc = (model.__doc__ or "").strip().split("\n\n")[0]
        lines += [f"## {model.__name__}", "", _cell(doc), ""]
        lines += [_fence(model.model_json_schema(by_alias=True)), ""]
    lines += [
        "## Role outputs",
        "",
        "What the schema checker (`palaestra.protocol.schema_checker`) reads from",
        "`palaestra.protocol.schema_tables`; the full rules, with every failure line,",
        "are in [the edgearena-v1 guide](../agents/edgearena.md#role-outputs).",
        "A kind is `text` (a non-blank string), `string`, `level` (one of "
        + ", ".join(f"`{level}`" for level in tables.LEVELS)
        + ") or `bool`; a trailing `?` marks an optional key.",
        "",
        "| what | keys |",
        "|---|---|",
        "| Scout text keys | " + ", ".join(f"`{key}`" for key in tables.SCOUT_TEXT) + " |",
        "| a claim | " + _rules(tables.CLAIM) + " |",
        "| an evidence item | " + _rules(tables.EVIDENCE) + " |",
        "| Build `execution` text keys | "
        + ", ".join(f"`{key}`" for key in tables.EXECUTION_TEXT)
        + " |",
        "| an execution phase given as an object (all optional strings) | "
        + ", ".join(f"`{key}`" for key in tables.PHASE_STEP_KEYS)
        + ", `steps` (array of strings) |",
        "| Verify scores (numbers 0..100) | "
        + ", ".join(f"`{key}`" for key in tables.SCORES)
        + " |",
        "| an evidence assessment | " + _rules(tables.EVIDENCE_ASSESSMENT) + " |",
        "| a claim assessment | " + _rules(tables.CLAIM_ASSESSMENT) + " |",
        "| Critique verdicts | " + ", ".join(f"`{v}`" for v in tables.VERDICTS) + " |",
        "",
        "The keys the registration wizard's `required-fields` check wants in a bare",
        "simulation reply:",
        "",
        "| role | required keys |",
        "|---|---|",
    ]
    for role, keys in tables.SIMULATION_REQUIRED_KEYS.items():
        lines.append(f"| {role.value} | " + ", ".join(f"`{key}`" for key in keys) + " |")
    lines += ["", *role_output_schemas()]
    return "\n".join(lines) + "\n"


def role_output_schemas() -> list[str]:
    """Each phase's output as JSON Schema: the rules, and the house's narrower grammar."""
    from palaestra.protocol.constants import Phase
    from palaestra.protocol.output_json_schemas import (
        accepted_output_schema,
        output_json_schema,
    )

    lines = [
        "### Role outputs as JSON Schema",
        "",
        "The same rules as JSON Schema (`accepted_output_schema` in",
        "`palaestra.protocol.output_json_schemas`): an output is accepted exactly when it",
        "matches its phase's schema and its `candidate_id` is the dispatched one. Extra",
        "keys are allowed and kept; the whole output is at most 262,144 bytes.",
        "",
    ]
    for phase in Phase:
        lines += [
            f"#### {phase.value.title()} output {{ #output-{phase.value.lower()} }}",
            "",
            f"The {phase.role.value} role answers it, within {phase.deadline_ms // 1000} s.",
            "",
            _fence(accepted_output_schema(phase)),
            "",
            f'??? note "What the house generates for {phase.value} (a narrower schema)"',
            "",
            "    The arena's local model writes its answers under this grammar",
            "    (`output_json_schema`): closed objects, short texts and arrays. Every",
            "    answer it allows is valid; yours need not be this narrow.",
            "",
            *("    " + line for line in _fence(output_json_schema(phase)).splitlines()),
            "",
        ]
    return lines


# -- status machine ----------------------------------------------------------------------

#: A hand-written page asks for a generated block with this marker.
STATUS_MACHINE_MARKER = "<!-- generated: status-machine -->"


def status_machine_diagram() -> str:
    """The agent status machine as a Mermaid diagram, read off ``rules.status.transition``."""
    from palaestra.rules.status import SUSPENDED_AT, AgentState, Event, Status, transition

    edges: dict[tuple[Status, Status], list[str]] = {}
    for status in Status:
        for paused_from in [None] if status is not Status.PAUSED else list(Status):
            if paused_from is Status.PAUSED:
                continue
            for failures in range(SUSPENDED_AT + 1):
                state = AgentState(status, failures=failures, paused_from=paused_from)
                for event in Event:
                    after = transition(state, event).status
                    if after is status:
                        continue
                    label = event.value
                    if event is Event.FAILURE:
                        label = f"failure, {failures + 1} in a row"
                    labels = edges.setdefault((status, after), [])
                    if event is Event.FAILURE and any(x.startswith("failure") for x in labels):
                        continue  # the first count that moves it is the one to show
                    if label not in labels:
                        labels.append(label)
    lines = ["```mermaid", "stateDiagram-v2", f"    [*] --> {Status.PENDING.value}"]
    for (before, after), labels in edges.items():
        lines.append(f"    {before.value} --> {after.value}: {' / '.join(labels)}")
    lines.append("```")
    return "\n".join(lines)


# -- the hook ------------------------------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for uri, producer in PAGES.items():
        content = globals()[producer]()
        files.append(File.generated(config, uri, content=content))
    dashboard = json.dumps(grafana_dashboard(), indent=2) + "\n"
    files.append(File.generated(config, "reference/grafana-dashboard.json", content=dashboard))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if STATUS_MACHINE_MARKER in markdown:
        markdown = markdown.replace(STATUS_MACHINE_MARKER, status_machine_diagram())
    return markdown
