"""Curation into a token budget: candidates from retrieval, ranked by
``tulving.domain.ranking`` and packed by ``tulving.domain.packing`` (``curator``)."""
