"""LLM access: the client, its HTTP connection pools, its circuit breaker, and untrusted text in prompts."""
