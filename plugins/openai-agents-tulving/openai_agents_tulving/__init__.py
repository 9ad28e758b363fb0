"""Tulving memory for the OpenAI Agents SDK.

    from agents import Agent, Runner
    from tulving import Memory
    from openai_agents_tulving import TulvingSession, memory_tools

    memory = Memory("agent.db", agent_id="assistant")
    agent = Agent(name="Assistant", tools=memory_tools(memory, token_budget=1500))
    result = await Runner.run(agent, "hello", session=TulvingSession("chat-42", memory))
"""

from openai_agents_tulving.session import TulvingSession, session_tag, session_user
from openai_agents_tulving.tools import curated_instructions, memory_tools

__all__ = ["TulvingSession", "curated_instructions", "memory_tools", "session_tag", "session_user"]
