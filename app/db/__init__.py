"""The server's own tables and the database handle shared with the checkpointer."""
