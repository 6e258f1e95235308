"""A stage command sends its run's last events before it returns (flows/common.py `main`): left queued, Prefect
sends them at exit and logs "WARNING | EventsWorker - Still processing items" on a clean run's stderr (seen under
load in `make test`). Fast: a fake flow and a recording events worker."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from prefect.events import worker as events

from flows import common
from tasks.core.errors import ConfigError


class Worker:
    flushed = 0

    def wait_until_empty(self):
        Worker.flushed += 1


@pytest.fixture
def recorded(monkeypatch):
    Worker.flushed = 0
    monkeypatch.setattr(common, "preflight", lambda *a: None)
    monkeypatch.setattr(events.EventsWorker, "instance", classmethod(lambda cls, *a: Worker()))
    return monkeypatch


def flow_returning(state=None, error=None):
    def run(return_state, **kwargs):
        if error:
            raise error
        return state
    return type("Flow", (), {"name": "ingest", "__call__": staticmethod(run)})()


def test_the_queued_events_are_sent_before_a_stage_returns(recorded):
    recorded.setattr(events.EventsWorker, "_instances", {"k": object()})
    ok = SimpleNamespace(is_failed=lambda: False)
    assert common.main(flow_returning(ok)) == 0 and Worker.flushed == 1
    failed = SimpleNamespace(is_failed=lambda: True, message="boom")
    assert common.main(flow_returning(failed)) == 1 and Worker.flushed == 2
    assert common.main(flow_returning(error=ConfigError("params.yaml: x: bad"))) == 1 and Worker.flushed == 3


def test_no_worker_is_started_for_a_run_that_sent_no_event(recorded):
    recorded.setattr(events.EventsWorker, "_instances", {})
    assert common.main(flow_returning(SimpleNamespace(is_failed=lambda: False))) == 0 and Worker.flushed == 0
