"""Challenges: the consent an owner's match needs from the other owner's fighter.

An owner's match always sets one of its fighters against another owner's (co-owned
fighters never meet), and each turn of that other fighter spends what its owner pays
for: a harness's server, a model fighter's provider key. So an owner may start a
match against another owner's fighter only with that fighter's consent: to friendly
matches for a friendly, to rated challenges for a rated one. The arena's own matches
(the matchmaker's, the admin's, the command line's) need none.

A fighter accepts friendlies by default unless each of its turns spends its owner's
provider key (a model fighter on a remote provider): there the owner must allow them.
"""

from __future__ import annotations

from dataclasses import dataclass

from palaestra.rules.cage.matchflow import MatchKind

__all__ = ["Challenged", "accepts_friendlies_by_default", "challenge_refusal"]


@dataclass(frozen=True, slots=True)
class Challenged:
    """The other owner's fighter, and the challenges its owner lets it take."""

    fighter_id: str
    accepts_friendly: bool
    accepts_rated: bool


def accepts_friendlies_by_default(spends_owner_key: bool) -> bool:
    """Whether a new fighter takes other owners' friendlies unless its owner says otherwise."""
    return not spends_owner_key


def challenge_refusal(challenged: Challenged, kind: MatchKind) -> str | None:
    """Why an owner may not start a ``kind`` match against ``challenged``, or None."""
    if kind is MatchKind.RATED:
        if challenged.accepts_rated:
            return None
        return f"fighter {challenged.fighter_id} does not accept rated challenges"
    if challenged.accepts_friendly:
        return None
    return (
        f"fighter {challenged.fighter_id} does not accept friendly matches from other owners "
        "(its owner can allow them)"
    )
