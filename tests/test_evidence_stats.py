"""benchmarks/evidence.py's statistics: the SE of paired differences, the null's percentile, the verdicts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def evidence() -> ModuleType:
    spec = importlib.util.spec_from_file_location("evidence_bench", BENCH / "evidence.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["evidence_bench"] = module
    spec.loader.exec_module(module)
    return module


def test_paired_effect_uses_the_differences_not_the_two_sds(evidence: ModuleType) -> None:
    before = np.array([0.30, 0.40, 0.50, 0.35, 0.45])
    after = before + np.array([0.02, 0.01, 0.03, 0.02, 0.02])  # large seed spread, tiny spread of the difference
    effect, se = evidence.paired_effect(before, after)
    assert effect == pytest.approx(0.02)
    assert se == pytest.approx(np.std([0.02, 0.01, 0.03, 0.02, 0.02], ddof=1) / np.sqrt(5))
    assert evidence.significant(effect, se)
    unpaired = np.sqrt(before.var(ddof=1) / 5 + after.var(ddof=1) / 5)
    assert not evidence.significant(effect, unpaired)


def test_seed_se_and_the_two_se_bar(evidence: ModuleType) -> None:
    mean, se = evidence.seed_mean_se([1.0, 2.0, 3.0, 4.0])
    assert mean == pytest.approx(2.5)
    assert se == pytest.approx(np.sqrt(5 / 3) / 2)
    assert np.isnan(evidence.seed_mean_se([1.0])[1])
    assert not evidence.significant(0.1, float("nan"))
    assert evidence.significant(-0.2, 0.1) and not evidence.significant(0.19, 0.1)
    with pytest.raises(ValueError):
        evidence.paired_effect([1.0, 2.0], [1.0])


def test_null_percentile_averages_each_shuffle_over_seeds_first(evidence: ModuleType) -> None:
    # 3 seeds x 20 shuffles: shuffle k reads k/100 on every seed but one nan, so its seed mean is k/100.
    null = np.tile(np.arange(20) / 100, (3, 1))
    null[1, 4] = np.nan
    mean, p95, used = evidence.null_summary(null)
    assert used == 20
    assert mean == pytest.approx(np.mean(np.arange(20) / 100))
    assert p95 == pytest.approx(np.percentile(np.arange(20) / 100, 95))
    assert evidence.null_summary(np.full((2, 3), np.nan))[2] == 0


def test_summary_and_compare_on_runs(evidence: ModuleType) -> None:
    def audit(value: float) -> dict[str, object]:
        return {"n": 30, "choice_only": {"value": value}, "hubness": {"reason": "too few"}}

    def run(values: list[float], null: float) -> dict[str, object]:
        seeds = {
            str(s): {"audit": audit(v), "nulls": [audit(null + j / 1000) for j in range(10)]}
            for s, v in enumerate(values)
        }
        return {"seeds": seeds}

    old = run([0.40, 0.42, 0.38, 0.41], null=0.30)
    new = run([0.30, 0.33, 0.29, 0.30], null=0.30)
    rows = evidence.summarise(old)
    assert set(rows) == {"choice_only"}
    assert rows["choice_only"]["verdict"] == "ABOVE"
    assert evidence.summarise(new)["choice_only"]["verdict"] == "ok"  # 0.305 <= p95 of 0.300..0.309
    inverted = run([0.20, 0.22, 0.18, 0.21], null=0.30)  # far under every null shuffle: an inverted tell
    low = evidence.summarise(inverted)["choice_only"]
    assert low["verdict"] == "BELOW"
    assert low["null_p5"] == pytest.approx(np.percentile(0.30 + np.arange(10) / 1000, 5))
    assert low["null_p5"] < low["null_mean"] < low["null_p95"]
    effect = evidence.compare(old, new)["choice_only"]
    assert effect["effect"] == pytest.approx(-0.0975)
    assert effect["pairs"] == 4 and effect["significant"]


def test_parsers(evidence: ModuleType) -> None:
    assert evidence.parse_seeds("0-3,7") == [0, 1, 2, 3, 7]
    assert evidence.parse_overrides(["A=0.5", "B=[1,2]", "C=csls"]) == {"A": 0.5, "B": [1, 2], "C": "csls"}
    assert evidence.setting_args("knobs-0-1-2") == ["--knobs", "0,1,2"]
    assert evidence.setting_args("needs-context") == ["--style", "needs-context"]


def test_the_two_sided_verdict(evidence: ModuleType) -> None:
    assert evidence.verdict(0.30, 0.20, 0.30) == "ok"  # at the upper bar: the "at or under"
    assert evidence.verdict(0.20, 0.20, 0.30) == "ok"
    assert evidence.verdict(0.301, 0.20, 0.30) == "ABOVE"
    assert evidence.verdict(0.199, 0.20, 0.30) == "BELOW"
    assert evidence.verdict(0.25, float("nan"), float("nan")) == "no null"


def test_the_summary_table_shows_both_percentiles(evidence: ModuleType) -> None:
    seeds = {
        str(s): {
            "audit": {"n": 30, "choice_only": {"value": 0.1}},
            "nulls": [{"choice_only": {"value": 0.25 + j / 100}} for j in range(10)],
            "wall": {"generate": 1.0, "audit": 1.0, "nulls": 1.0},
        }
        for s in range(3)
    }
    data = {"seeds": seeds, "task": "t", "setting": "s", "store": "/x/bg1", "commit": "abcdef0", "audit_commit": "a",
            "overrides": {}, "nulls": 10}  # fmt: skip
    lines = evidence.summary_table(data)
    assert "| null p5 | null p95 |" in lines[2]
    assert lines[-1].startswith("| choice_only | 0.100 |") and lines[-1].endswith("| BELOW |")


def test_the_null_deals_every_rank_evenly_and_relabels_each_seed_afresh(evidence: ModuleType) -> None:
    targets = evidence.real_photos.null_targets
    one = targets(48, 4, shuffle=3, salt=0)
    assert np.all(np.bincount(one, minlength=4) == 12)  # an exact deal: no rank rule reads the null
    assert np.array_equal(one, targets(48, 4, shuffle=3, salt=0))  # seeded
    others = [targets(48, 4, shuffle=3, salt=s) for s in range(1, 6)]
    assert all(not np.array_equal(one, o) for o in others)  # seed s's copy j is its own draw
    shared = [targets(48, 4, shuffle=3, salt=None) for _ in range(2)]
    assert np.array_equal(*shared)  # the draw before session 26: copy j the same on every seed
