"""The services: async work on the store and through the egress client, one package per domain.

- ``accounts``: owners, tokens and who is calling;
- ``agents``: edgearena agents (registry, lifecycle, wizard, health monitor);
- ``runs``: edgearena runs (service, stepper, dispatch, recorder, completion, house, report);
- ``cage``: cage.v1 (fighters, entrants, matches, referee, matchmaker);
- ``ratings``: live ratings and the published leaderboards;
- ``export``: the public dataset;
- ``loops``: the periodic loops the services run in;
- ``batcher``: concurrent calls grouped into batches (group commit, grouped look-ups).

Services take the :class:`palaestra.platform.Platform` as their first argument;
their decisions are the pure functions of ``palaestra.rules``.
"""
