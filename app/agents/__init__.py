"""The graphs the server hosts by default."""
