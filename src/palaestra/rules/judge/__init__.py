"""The cage.v1 judge, pure: leak, hijack and utility of a defender's reply.

- ``verdict``: the judge itself, a reply's findings and the verdict;
- ``chains``: the chains of views a reply is read through, and the reading budget;
- ``views``: the canonical views and the ciphers; their families ``decoders`` (with
  ``digits`` and ``groups``, ``tokens`` and ``runs``, ``words``, ``bytes`` and ``unicode``,
  ``alphabets``, ``ciphered`` and its ``cipher_tables``), ``escapes``, ``spelled``,
  ``letters``, ``skeleton``, ``translate``, ``hidden``, ``joined`` and ``regrouped``,
  ``hints``, ``tags``, ``classes``;
- ``match``: how a secret is found in one view: folding, tokens, the window; ``folding``:
  a view folded for comparison, and the lines of a view that show a finding;
- ``task_bank``: the user tasks a defender must still answer; ``answers``: whether it did.

``__all__`` holds what other packages use; the rest is imported from its module.
"""

from __future__ import annotations

from palaestra.rules.judge.match import Rule
from palaestra.rules.judge.task_bank import UserTask, draw_task
from palaestra.rules.judge.verdict import judge_reply

__all__ = ["Rule", "UserTask", "draw_task", "judge_reply"]
