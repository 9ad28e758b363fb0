"""What every room of the application shares: the composition root, the context of one
Memory, batching, the LLM gateway and its budget, vector-index reconciliation, warnings."""
