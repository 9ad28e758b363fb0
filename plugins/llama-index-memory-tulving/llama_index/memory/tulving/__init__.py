"""A LlamaIndex memory block backed by Tulving.

    from llama_index.core.memory import Memory
    from llama_index.memory.tulving import TulvingMemoryBlock
    from tulving import Memory as TulvingMemory

    store = TulvingMemory("agent.db", agent_id="assistant")
    memory = Memory.from_defaults(session_id="chat-1", token_limit=4000,
                                  memory_blocks=[TulvingMemoryBlock(memory=store,
                                                                    token_budget=800)])
"""

from llama_index.memory.tulving.base import TulvingMemoryBlock

__all__ = ["TulvingMemoryBlock"]
