"""Language models for kgqa: a scripted engine for tests and demos (local and LiteLLM models come with the CLI)."""
