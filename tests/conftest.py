"""Fixtures shared by every test folder: the throwaway PostgreSQL cluster.

The scripted model streams at full speed in tests (its default is a human pace), in this
process and in the servers tests start.
"""

import os

os.environ.setdefault("THREADLINE_SCRIPTED_PACE_S", "0")

pytest_plugins = ["tests.pg"]
