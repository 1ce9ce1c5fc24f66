"""Example agents built with ``palaestra.harness``; each passes ``palaestra check``.

The offline ones are deterministic baselines and say so in their ``modelId``.
Serve one with ``palaestra agent serve examples.<name>:app --port <port>``
from the repository's root. Each module also has ``create_agent(...)`` for
code that builds agents with its own key, store or clock.
"""
