"""The consent an owner's match needs from the other owner's fighter: every kind against
every combination of consents, and the defaults by what the fighter's turns spend."""

from __future__ import annotations

import pytest

from palaestra.rules.cage.challenges import (
    Challenged,
    accepts_friendlies_by_default,
    challenge_refusal,
)
from palaestra.rules.cage.matchflow import MatchKind

FRIENDLY_REFUSED = (
    "fighter f1 does not accept friendly matches from other owners (its owner can allow them)"
)
RATED_REFUSED = "fighter f1 does not accept rated challenges"


@pytest.mark.parametrize(
    ("accepts_friendly", "accepts_rated", "kind", "expected"),
    [
        (False, False, MatchKind.FRIENDLY, FRIENDLY_REFUSED),
        (False, False, MatchKind.RATED, RATED_REFUSED),
        (True, False, MatchKind.FRIENDLY, None),
        (True, False, MatchKind.RATED, RATED_REFUSED),
        # Rated consent is its own: it neither needs nor gives consent to friendlies.
        (False, True, MatchKind.FRIENDLY, FRIENDLY_REFUSED),
        (False, True, MatchKind.RATED, None),
        (True, True, MatchKind.FRIENDLY, None),
        (True, True, MatchKind.RATED, None),
    ],
)
def test_challenge_refusal(
    accepts_friendly: bool, accepts_rated: bool, kind: MatchKind, expected: str | None
) -> None:
    challenged = Challenged("f1", accepts_friendly=accepts_friendly, accepts_rated=accepts_rated)
    assert challenge_refusal(challenged, kind) == expected


@pytest.mark.parametrize(("spends_owner_key", "accepts"), [(True, False), (False, True)])
def test_a_fighter_that_spends_its_owners_key_takes_no_friendlies_by_default(
    spends_owner_key: bool, accepts: bool
) -> None:
    assert accepts_friendlies_by_default(spends_owner_key) is accepts
