"""The partial indexes' predicates say in SQL what the overview's feed and the failure lists
say in Python: every kind and outcome is notable (or failed) in both or in neither."""

from __future__ import annotations

import sqlite3
from itertools import product

import pytest

from palaestra.store.models import FAILED_EVENTS, NOTABLE_EVENTS
from palaestra.web.queries import ACTIVITY_KINDS, FAILURE_KINDS

KINDS = (*ACTIVITY_KINDS, *FAILURE_KINDS, "dispatch", "key", "wizard-start", "other")
OUTCOMES = ("success", "failure", "ACTIVE", "set")


@pytest.mark.parametrize(("kind", "outcome"), list(product(KINDS, OUTCOMES)))
def test_the_sql_predicates_agree_with_the_kinds(kind: str, outcome: str) -> None:
    database = sqlite3.connect(":memory:")
    database.execute("CREATE TABLE agent_events (kind TEXT, outcome TEXT)")
    database.execute("INSERT INTO agent_events VALUES (?, ?)", (kind, outcome))
    notable = database.execute(f"SELECT count(*) FROM agent_events WHERE {NOTABLE_EVENTS}")  # noqa: S608
    failed = database.execute(f"SELECT count(*) FROM agent_events WHERE {FAILED_EVENTS}")  # noqa: S608
    expected = kind in ACTIVITY_KINDS or (kind in FAILURE_KINDS and outcome == "failure")
    assert notable.fetchone()[0] == int(expected)
    assert failed.fetchone()[0] == int(outcome == "failure")
