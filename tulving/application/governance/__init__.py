"""Trust and accountability: the audit trail, signing/review/integrity, corrections,
rollback/retention/purge, erasure of a data subject."""
