"""Agents: everything that proposes candidate kernels (LLM agents now, expert agents later).

All agents implement :class:`agents.protocol.Agent`, so the graph treats them alike.
"""
