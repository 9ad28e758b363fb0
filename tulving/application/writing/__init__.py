"""What happens on ``store``: the one write path (``writer``), write-time decisions
(``contradictions``: supersede, dedup, conflicts) and the plugins' write hooks."""
