"""The LangGraph state machine: analyze -> algorithm_design -> summary -> hardware_tuning -> finalize."""
