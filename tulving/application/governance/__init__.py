"""Trust and accountability: the audit trail, signing/review/integrity, corrections and
as-of reads, rollback/retention/purge, erasure of a data subject."""
