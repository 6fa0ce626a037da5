"""The fast-suite guard (tests/fast_budget.py): a fast test over the budget fails, a slow-marked one does not;
a shared fixture is checked on its own, not charged to the test that set it up; a run over the suite's budget
fails."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

BURN = """
import os
import time

import pytest


def burn(seconds):
    start = os.times()
    while sum(os.times()[:2]) - sum(start[:2]) < seconds:
        sum(i * i for i in range(10_000))


def test_over_budget():
    burn(0.5)


@pytest.mark.slow
def test_over_budget_but_slow():
    burn(0.5)


def test_within_budget():
    burn(0.02)


def test_sleeping_is_not_counted():
    time.sleep(0.5)


@pytest.fixture(scope="module")
def shared():
    burn(0.5)


@pytest.fixture(scope="module")
def cheap_shared():
    burn(0.15)


def test_a_cheap_fixture_shared_is_not_charged_to_the_test(cheap_shared):
    burn(0.15)  # 0.3 s with the fixture, 0.15 s without


def test_first_of_an_expensive_shared_fixture(shared):
    pass


def test_second_of_an_expensive_shared_fixture(shared):
    pass
"""


def test_a_fast_test_over_the_budget_fails_and_a_slow_one_passes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROCBENCH_FAST_TEST_SECONDS", "0.25")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))
    pytester.makeini("[pytest]\nmarkers = slow: slow\n")
    pytester.makepyfile(test_burn=BURN)
    result = pytester.runpytest_subprocess("-p", "fast_budget", "-q")
    result.assert_outcomes(passed=5, failed=2)
    result.stdout.fnmatch_lines(["*test_over_budget took *over the 0.25 s budget of a fast test*"])
    result.stdout.fnmatch_lines(["*the shared fixture 'shared' (set up for *test_first_of_an_expensive_* took*"])
    assert "test_over_budget_but_slow took" not in result.stdout.str()


def test_the_budget_is_twenty_seconds_unless_overridden(monkeypatch: pytest.MonkeyPatch) -> None:
    from fast_budget import LIMIT_SECONDS, limit_seconds

    monkeypatch.delenv("PROCBENCH_FAST_TEST_SECONDS", raising=False)
    assert LIMIT_SECONDS == 20.0 and limit_seconds() == 20.0
    monkeypatch.setenv("PROCBENCH_FAST_TEST_SECONDS", "0")
    assert limit_seconds() == 0.0


@pytest.mark.parametrize("workers", [None, 2])
def test_without_the_variable_the_tests_over_the_budget_are_listed_at_the_end(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: int | None
) -> None:
    """`make test` (no PROCBENCH_FAST_TEST_SECONDS): the tests over the budget pass and are listed in the summary,
    also when pytest-xdist runs them in worker processes (the notes travel in the test reports)."""
    if workers:
        pytest.importorskip("xdist")
    monkeypatch.delenv("PROCBENCH_FAST_TEST_SECONDS", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    pytester.makeini("[pytest]\nmarkers = slow: slow\n")
    pytester.makeconftest("import fast_budget\n\nfast_budget.LIMIT_SECONDS = 0.25  # the default budget, made small\n")
    pytester.makepyfile(test_burn=BURN)
    run_in = ["-n", str(workers), "--dist", "loadfile"] if workers else []  # as `make test` runs the suite
    result = pytester.runpytest_subprocess("-p", "fast_budget", "-q", *run_in)
    result.assert_outcomes(passed=7)
    result.stdout.fnmatch_lines(["*2 fast tests over the budget (binding with PROCBENCH_FAST_TEST_SECONDS=20)*"])
    result.stdout.fnmatch_lines(["*test_over_budget took *over the 0.25 s budget of a fast test*"])
    result.stdout.fnmatch_lines(["*the shared fixture 'shared' (set up for *test_first_of_an_expensive_* took*"])


SLEEPY = """
import time


def test_sleeps():
    time.sleep(0.6)


def test_quick():
    pass
"""


def test_a_run_over_the_suites_budget_fails_and_one_within_it_says_its_time(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``make test-budget``: PROCBENCH_FAST_SUITE_SECONDS bounds the run's wall time; over it, the run fails also
    when pytest-xdist runs the tests in workers (the controller's session spans theirs)."""
    xdist = importlib.util.find_spec("xdist") is not None
    monkeypatch.delenv("PROCBENCH_FAST_TEST_SECONDS", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    pytester.makeini("[pytest]\nmarkers = slow: slow\n")
    pytester.makepyfile(test_sleepy=SLEEPY)

    monkeypatch.setenv("PROCBENCH_FAST_SUITE_SECONDS", "0.5")
    workers = ["-n", "2", "--dist", "loadfile"] if xdist else []  # as `make test-budget` runs the suite
    over = pytester.runpytest_subprocess("-p", "fast_budget", "-q", *workers)
    assert over.ret == pytest.ExitCode.TESTS_FAILED
    over.assert_outcomes(passed=2)  # every test passed: the run as a whole is over
    over.stdout.fnmatch_lines(["*the fast suite is over its budget*", "*run took * s wall time, * over the 0.5 s*"])

    monkeypatch.setenv("PROCBENCH_FAST_SUITE_SECONDS", "600")
    within = pytester.runpytest_subprocess("-p", "fast_budget", "-q")
    assert within.ret == pytest.ExitCode.OK
    within.stdout.fnmatch_lines(["*fast suite: * s wall time, within its 600 s budget*"])


def test_the_suites_budget_is_off_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    from fast_budget import SUITE_SECONDS, suite_limit_seconds

    monkeypatch.delenv("PROCBENCH_FAST_SUITE_SECONDS", raising=False)
    assert suite_limit_seconds() == 0.0 and SUITE_SECONDS == 300.0
    monkeypatch.setenv("PROCBENCH_FAST_SUITE_SECONDS", str(SUITE_SECONDS))
    assert suite_limit_seconds() == 300.0
