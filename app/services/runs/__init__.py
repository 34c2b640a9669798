"""Runs: admission, execution, reading, stopping, and their prebuilt SQL."""

from app.services.runs.service import RunService

__all__ = ["RunService"]
