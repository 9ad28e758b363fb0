"""Finding memories: search in four modes (``search``), its knobs (``options``), the
reads of its second stage (``refine``; the score rules are in ``tulving.domain.rerank``
and ``tulving.domain.fusion``), lookups by id or key (``lookup``) and access statistics
(``access``)."""
