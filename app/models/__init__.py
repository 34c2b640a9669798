"""Chat model providers: `scripted` (offline, the default) and OpenAI-compatible endpoints."""
