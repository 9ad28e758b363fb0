"""What makes a store an agent's memory: sessions and their summaries, ``remember``
(extraction, durable jobs), consolidation, procedures and working memory, the profile."""
