"""When a failed attempt of a node or task runs again, and after how long."""

from __future__ import annotations

import random
from collections.abc import Sequence

from engine.types import RetryPolicy


def as_policies(value: RetryPolicy | Sequence[RetryPolicy] | None) -> tuple[RetryPolicy, ...]:
    """A node's retry policies, in the order they are tried against an error."""
    if value is None:
        return ()
    if isinstance(value, RetryPolicy):
        return (value,)
    return tuple(value)


def _matches(policy: RetryPolicy, error: Exception) -> bool:
    """Whether `policy.retry_on` (a class, classes or a predicate) covers `error`."""
    retry_on = policy.retry_on
    if isinstance(retry_on, type):
        return isinstance(error, retry_on)
    if isinstance(retry_on, Sequence):
        return isinstance(error, tuple(retry_on))
    return bool(retry_on(error))


def retry_delay(policies: Sequence[RetryPolicy], error: Exception, failed: int) -> float | None:
    """Seconds to wait before another attempt, after `failed` attempts of which the last
    raised `error`; None when it is not retried. The first policy whose `retry_on`
    matches the error decides, as in LangGraph."""
    for policy in policies:
        if _matches(policy, error):
            if failed >= policy.max_attempts:
                return None
            interval = min(
                policy.max_interval,
                policy.initial_interval * policy.backoff_factor ** (failed - 1),
            )
            return interval + (random.uniform(0, 1) if policy.jitter else 0)
    return None
