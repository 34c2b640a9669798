"""Caches of node results, for nodes added with a `CachePolicy`."""
