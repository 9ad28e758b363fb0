"""Tulving memory for Pydantic AI: the ``TulvingMemory`` capability.

    from pydantic_ai import Agent
    from pydantic_ai_tulving import TulvingMemory
    from tulving import Memory

    memory = Memory("agent.db", agent_id="assistant")
    agent = Agent("openai:gpt-4o-mini", deps_type=User,
                  capabilities=[TulvingMemory(memory, user_id=lambda ctx: ctx.deps.id)])
"""

from pydantic_ai_tulving.capability import TulvingMemory

__all__ = ["TulvingMemory"]
