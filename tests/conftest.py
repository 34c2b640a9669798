"""Fixtures shared by every test folder: the throwaway PostgreSQL cluster, and the
Hypothesis profile.

The scripted model streams at full speed in tests (its default is a human pace), in this
process and in the servers tests start.
"""

import os

from hypothesis import settings

os.environ.setdefault("THREADLINE_SCRIPTED_PACE_S", "0")

# Property tests check what happens, not how fast (speed is bench/'s): without Hypothesis's
# 200 ms deadline per example, which a loaded machine's pause can miss.
settings.register_profile("threadline", deadline=None)
settings.load_profile("threadline")

pytest_plugins = ["tests.pg"]
