"""Kernel templates of the expert agents (see :mod:`agents.expert.kernels.base` for the contract)."""
