"""The pure core: entries, types, decay, ranking, packing, redaction, errors. No I/O."""
