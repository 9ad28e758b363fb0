"""Tulving memory for Google's Agent Development Kit: a ``BaseMemoryService``.

    from adk_tulving import TulvingMemoryService
    from google.adk.runners import Runner
    from tulving import Memory

    memory = Memory("agent.db", agent_id="assistant")
    runner = Runner(app_name="helper", agent=agent, session_service=sessions,
                    memory_service=TulvingMemoryService(memory))
"""

from adk_tulving.naming import tulving_id
from adk_tulving.service import TulvingMemoryService

__all__ = ["TulvingMemoryService", "tulving_id"]
