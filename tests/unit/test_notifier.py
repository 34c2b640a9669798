"""A process's notifier (app/runs/notify.py): a listener's event is set by the next
notification of its key; a run's notification that came before anyone listened is kept
for a moment, so a client that starts waiting on a run just after the run ended in
another process is not left to the poll."""

import pytest

from app.runs import notify
from app.runs.notify import QUEUE, Notifier, run_key


async def test_a_listener_is_woken_by_the_next_notification_of_its_key() -> None:
    notifier = Notifier()
    event = notifier.listen(run_key("a"))
    notifier.fire(run_key("b"))
    assert not event.is_set()
    notifier.fire(run_key("a"))
    assert event.is_set()
    assert not notifier.listen(run_key("a")).is_set()  # that notification was heard


async def test_a_runs_notification_before_its_listener_is_kept_for_a_moment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    notifier = Notifier()
    clock = [100.0]
    monkeypatch.setattr(notify.time, "monotonic", lambda: clock[0])
    notifier.fire(run_key("ended"))
    notifier.fire(QUEUE)  # not a run's: nobody is owed it
    assert notifier.listen(run_key("ended")).is_set()
    assert not notifier.listen(run_key("ended")).is_set()  # kept for one listener
    assert not notifier.listen(QUEUE).is_set()
    notifier.fire(run_key("late"))
    clock[0] += notify.KEEP_UNHEARD_S
    assert not notifier.listen(run_key("late")).is_set()


async def test_unheard_notifications_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    notifier = Notifier()
    monkeypatch.setattr(notify, "KEEP_UNHEARD_MAX", 3)
    for name in "abcde":
        notifier.fire(run_key(name))
    heard = [notifier.listen(run_key(name)).is_set() for name in "abcde"]
    assert heard == [False, False, True, True, True]
