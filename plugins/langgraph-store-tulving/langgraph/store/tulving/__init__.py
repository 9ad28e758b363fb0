"""A LangGraph store over Tulving memory.

    from langgraph.store.tulving import TulvingStore
    from tulving import Memory

    with Memory("agent.db", agent_id="assistant") as memory:
        store = TulvingStore(memory, index={"fields": ["text"]})
        store.put(("memories", "ann"), "diet", {"text": "Ann is vegetarian"})
        store.search(("memories", "ann"), query="what does Ann eat?")
        store.curate(("memories", "ann"), "dinner plans", token_budget=500).content
"""

from langgraph.store.tulving.base import TulvingStore
from langgraph.store.tulving.keys import memory_key

__all__ = ["TulvingStore", "memory_key"]
