"""The model-facing tools: one module each, registered in ``registry.py``."""
