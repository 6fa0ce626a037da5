"""A pytest plugin (loaded by ``conftest.py``): a test not marked ``slow`` that takes more than
:data:`LIMIT_SECONDS` fails, so the fast suite (``make test``) stays within its five minutes.

What is measured: ``min(wall time, CPU time)`` of the test's setup, call and teardown, where CPU time is this
process's user + system time plus that of the child processes it waited for (a CLI run in a subprocess counts).

Why not wall time alone: this suite runs on shared machines (2 cores, several sessions), where a test's wall time
is inflated by whatever else runs; a wall-time guard would fail tests at random. Why not CPU time alone: torch,
BLAS and FAISS run several threads, whose CPU times add up, so a test taking 12 s on two idle cores can use 24 s
of CPU. Each clock is inflated by one thing only (load for wall time, parallel threads for CPU time) and both
are at least the test's idle single-core cost for CPU-bound work, so the smaller of the two is the closest
estimate of how long the test takes on an idle machine. A test that mostly sleeps or waits is undercounted;
none of the suite's tests do for long.

What is counted: the test's own setup (function-scoped fixtures) and call. A fixture shared by a module or the
session is set up once for many tests, so its cost is taken out of the test that happened to trigger it and
checked on its own against the same budget (it fails that test, naming the fixture).

The whole run has a budget too: with ``PROCBENCH_FAST_SUITE_SECONDS`` set (``make test-budget`` sets 300), a run
whose wall time, from the session's start to its end, exceeds it fails (exit code 1) with a line saying by how
much; the end of every such run states the wall time. It is wall time on purpose: what a person waits for.

``PROCBENCH_FAST_TEST_SECONDS`` sets the limit and makes it binding (``0`` turns the guard off, e.g. to profile;
``make test-budget`` runs the suite with 20). Without it the guard reports the fast tests over 20 s at the end of
the run instead of failing them: the suite does not meet its budget yet, and CI must stay green meanwhile.
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from typing import Any

import pytest

#: The budget of one fast test, in seconds (the contributing rules: a fast test takes < ~20 s).
LIMIT_SECONDS = 20.0
LIMIT_ENV = "PROCBENCH_FAST_TEST_SECONDS"
#: The budget of the whole fast suite's wall time, in seconds (``make test-budget``; issue 59: five minutes).
SUITE_SECONDS = 300.0
SUITE_ENV = "PROCBENCH_FAST_SUITE_SECONDS"
_KEY = pytest.StashKey[dict[str, float]]()
#: Shared (module or session) fixtures set up during a test's setup: (name, wall, CPU) each.
_SHARED_KEY = pytest.StashKey[list[tuple[str, float, float]]]()
_current: list[pytest.Item] = []  # the test being set up
_LIMIT_KEY = pytest.StashKey[float]()
#: CPU seconds of the phase (setup, call) that just ran.
_CPU_KEY = pytest.StashKey[float]()


def limit_seconds() -> float:
    """The limit of this session (read when it starts): :data:`LIMIT_ENV` when set, else :data:`LIMIT_SECONDS`."""
    value = os.environ.get(LIMIT_ENV, "").strip()
    return float(value) if value else LIMIT_SECONDS


def suite_limit_seconds() -> float:
    """The whole run's wall-time budget: :data:`SUITE_ENV` when set (``0``: none), else none (0)."""
    value = os.environ.get(SUITE_ENV, "").strip()
    return float(value) if value else 0.0


class _SuiteClock:
    """The run's wall time against its budget (in the process that runs the session; with pytest-xdist, the
    controller, whose session spans the workers')."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.started = time.perf_counter()
        self.spent: float | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.started = time.perf_counter()

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.spent = time.perf_counter() - self.started
        if self.spent > self.limit and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.spent is None:
            return
        if self.spent > self.limit:
            terminalreporter.section("the fast suite is over its budget", red=True)
            terminalreporter.write_line(
                f"the run took {self.spent:.1f} s wall time, {self.spent - self.limit:.1f} s over the "
                f"{self.limit:g} s budget ({SUITE_ENV}): make the slowest tests cheaper (--durations=10 lists "
                "them) or mark those over ~20 s @pytest.mark.slow"
            )
        else:
            spent = f"{self.spent:.1f} s wall time"
            terminalreporter.write_line(f"fast suite: {spent}, within its {self.limit:g} s budget")


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


_ENFORCE_KEY = pytest.StashKey[bool]()
#: The report property that carries an over-budget note (reports, unlike a worker's config, reach the process that
#: prints the summary when pytest-xdist runs the tests in workers).
_OVER_PROPERTY = "fast_budget_over"


class _OverBudgetSummary:
    """Collects the over-budget notes from the test reports and lists them at the end of the run."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.messages += [str(value) for name, value in report.user_properties if name == _OVER_PROPERTY]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.messages:
            terminalreporter.section(f"{len(self.messages)} fast tests over the budget (binding with {LIMIT_ENV}=20)")
            for message in self.messages:
                terminalreporter.write_line(message)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_LIMIT_KEY] = limit_seconds()  # read once: a test changing the variable changes no budget
    config.stash[_ENFORCE_KEY] = bool(os.environ.get(LIMIT_ENV, "").strip())
    config.pluginmanager.register(_OverBudgetSummary(), f"fast-budget-summary-{id(config)}")
    suite = suite_limit_seconds()
    if suite > 0 and not hasattr(config, "workerinput"):  # an xdist worker's session is a part of the run
        config.pluginmanager.register(_SuiteClock(suite), f"fast-budget-suite-{id(config)}")


def _over_budget(item: pytest.Item, report: pytest.TestReport, message: str) -> None:
    """Fail the test (the limit was set explicitly), or note it for the run's summary."""
    if item.config.stash[_ENFORCE_KEY]:
        report.outcome = "failed"
        report.longrepr = message
    else:
        report.user_properties.append((_OVER_PROPERTY, message))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    spent = item.stash.setdefault(_KEY, {"wall": 0.0, "cpu": 0.0})
    spent["wall"] += call.duration
    spent["cpu"] += item.stash.get(_CPU_KEY, 0.0)
    shared = item.stash.get(_SHARED_KEY, [])
    if call.when == "setup":
        spent["wall"] -= sum(wall for _, wall, _ in shared)
        spent["cpu"] -= sum(cpu for _, _, cpu in shared)
    if call.when != "call" or not report.passed:
        return
    limit = item.config.stash[_LIMIT_KEY]
    if limit <= 0 or item.get_closest_marker("slow") is not None:
        return
    for name, wall, cpu in shared:
        if min(wall, cpu) > limit:
            _over_budget(
                item,
                report,
                f"the shared fixture {name!r} (set up for {item.nodeid}) took {min(wall, cpu):.1f} s (wall "
                f"{wall:.1f} s, CPU {cpu:.1f} s), over the {limit:g} s budget of a fast test: make it cheaper, or "
                "mark the tests using it @pytest.mark.slow",
            )
            return
    taken = min(spent["wall"], spent["cpu"])
    if taken > limit:
        _over_budget(
            item,
            report,
            f"{item.nodeid} took {taken:.1f} s (wall {spent['wall']:.1f} s, CPU {spent['cpu']:.1f} s; the smaller "
            f"counts) in setup and call, over the {limit:g} s budget of a fast test: make it cheaper, or mark it "
            "@pytest.mark.slow (run by `make test-slow` and CI)",
        )


def _timed_phase(item: pytest.Item) -> Generator[None, None, None]:
    start = _cpu_seconds()
    try:
        yield
    finally:
        item.stash[_CPU_KEY] = _cpu_seconds() - start


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    item.stash[_SHARED_KEY] = []
    _current.append(item)
    try:
        yield from _timed_phase(item)
    finally:
        _current.pop()


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
) -> Generator[None, Any, None]:
    if fixturedef.scope == "function" or not _current:
        yield
        return
    started, cpu = time.perf_counter(), _cpu_seconds()
    yield
    _current[-1].stash[_SHARED_KEY].append((fixturedef.argname, time.perf_counter() - started, _cpu_seconds() - cpu))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    yield from _timed_phase(item)
