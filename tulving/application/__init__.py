"""Use cases orchestrating the ports: the ``Memory`` facade and the services behind it,
grouped by what a user can do (read the facade first, then the room it points to):

- ``writing/``: what happens on ``store`` (build, govern, decide, commit, index);
- ``retrieval/``: search (key, lexical, semantic, hybrid), its second stage, lookups;
- ``curation/``: curate and orient into a token budget;
- ``agent_memory/``: sessions, summaries, remember/extraction, jobs, consolidation,
  procedures, profile, working memory;
- ``governance/``: audit, signing and review, corrections, rollback/retention, erasure;
- ``upkeep/``: eviction, maintenance, statistics;
- ``portability/``: bundles, export/import, sync;
- ``plumbing/``: what every room shares (composition root, context, batching, the LLM
  gateway and budget, vector-index reconciliation, warnings).

The pure rules (fusion, rerank, ranking, packing, decay) live in ``tulving.domain``.
"""
