"""The effective configuration as rows for `palaestra config`, with every secret masked."""

from __future__ import annotations

from pydantic import SecretStr

from palaestra.settings import Settings

__all__ = ["described"]


def described(settings: Settings) -> list[tuple[str, str, str]]:
    """(environment variable, effective value with secrets masked, description) rows."""
    rows = []
    for name, field in type(settings).model_fields.items():
        value = getattr(settings, name)
        if isinstance(value, SecretStr):
            shown = "********"
        elif value is None:
            shown = "(unset)"
        elif isinstance(value, list):
            shown = ",".join(str(v) for v in value) or "(none)"
        else:
            shown = str(value)
        if name == "database_url" and value is None:
            shown = f"(default) {settings.effective_database_url}"
        elif name in ("database_url", "broker_url") and value is not None:
            shown = _hide_password(value)
        rows.append((f"PALAESTRA_{name.upper()}", shown, field.description or ""))
    return rows


def _hide_password(url: str) -> str:
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "********"
