"""Fixtures shared by every test folder: the throwaway PostgreSQL cluster."""

pytest_plugins = ["tests.pg"]
