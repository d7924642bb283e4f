"""The LLM side of the agents: configuration, chat models, prompts, parsing and the LLM agent."""
