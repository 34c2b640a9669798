"""Runs: admission, execution, reading, stopping, and their prebuilt SQL (`service.py`
holds `RunService`, the one object the rest of the app calls)."""
