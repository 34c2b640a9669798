"""Runs: the queue, the workers that execute them, and their recorded streams."""
