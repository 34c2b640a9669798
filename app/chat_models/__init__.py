"""Chat model providers: `scripted` (offline, the default), OpenAI-compatible endpoints, and
whatever LangChain's `init_chat_model` builds (`app.chat_models.base.load_model`)."""
