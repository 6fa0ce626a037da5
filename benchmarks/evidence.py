"""Evidence for issue 54: the context-free probes of one visual set over generation seeds, each held to its own null,
and paired comparisons of two runs (old vs new code, a policy override vs the default) for the evidence ledger.

Run by hand (the store ingested, cleaned and embedded as ``benchmarks/real_photos.py``'s docstring says):

    python benchmarks/evidence.py run --code /work/old --store S --task visual-cloze --setting needs-context \\
        --seeds 0-9 --nulls 20 --out RUN.json [--work DIR] [--audit-code ROOT] [--override NAME=VALUE ...]
    python benchmarks/evidence.py summary RUN.json [RUN.json ...]
    python benchmarks/evidence.py compare BEFORE.json AFTER.json [--ledger benchmarks/evidence_ledger.jsonl \\
        --constant NAME | --rule NAME, --value-before V --value-after V --reason TEXT]

``run``: for every seed the store is copied (questions left out), ``procbench generate --task T <setting> --seed S``
runs in a child process on the code under ``--code`` (``PYTHONPATH`` and working directory that checkout, so the
editable install of this one does not shadow it), and the set is audited with ``real_photos._audit`` (the
context-free probes, audit seed 0) and ``--nulls`` K of its null copies ``real_photos._audit(folder, j, seed)``
(the answers dealt at random, their distance ranks still even: ``real_photos._null``). The audit runs in this
process on the code under ``--audit-code`` (default ``--code``; give one judge to both sides of a comparison). Each
finished seed is written to ``--out`` at once (atomic replace), so a run resumes where it stopped.

``summary``: per probe, the mean over seeds and its standard error (SE = sample SD / sqrt(seeds)); the null's
shuffle j averaged over the seeds as the real value is, giving K seed-averaged null values, their mean and 5th and
95th percentiles; verdict ``ok`` inside [p5, p95], ``ABOVE`` over p95 (the issue's acceptance bar, unchanged) and
``BELOW`` under p5: a probe reading far under its null is an inverted tell (the answer sits where the probe's
pick is not, which a reader can use as well), held to the mirror of the upper bar. Two one-sided 5% bars rather
than [p2.5, p97.5]: the upper one is the issue's acceptance and must not move; a null set is flagged on one probe
with probability about 10% (5% each side), and a p5 or p95 of K = 10 nulls is the interpolation between the two
extreme values, itself uncertain.

``compare``: per probe, the paired difference AFTER - BEFORE over the seeds both runs hold, its SE (SD of the
differences / sqrt(pairs)) and whether |effect| >= 2 SE (the issue's bar for keeping a rule or constant).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # imported by path (tests): real_photos and _common live beside this file
    sys.path.insert(0, str(HERE))

import real_photos  # noqa: E402

#: The probes a set is judged on: real_photos' context-free probes and question_distance's best rank rule.
PROBES = (*real_photos.PROBES, "rank_rule")
#: The issue's bar for a kept rule or constant: |effect| >= BAR standard errors of the paired difference.
BAR = 2.0
#: The null percentile a probe's seed-averaged value must stay at or under (issue 54's acceptance).
NULL_PERCENTILE = 95.0
#: The null percentile a probe's seed-averaged value must stay at or over (the inverted tell's mirror bar).
NULL_LOW_PERCENTILE = 100.0 - NULL_PERCENTILE


# --- statistics -------------------------------------------------------------------------------------------------


def seed_mean_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean of per-seed values (S,) and its standard error, sample SD (ddof 1) / sqrt(S); SE is nan for S < 2."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return float("nan"), float("nan")
    se = float(arr.std(ddof=1) / np.sqrt(arr.size)) if arr.size >= 2 else float("nan")
    return float(arr.mean()), se


def paired_effect(before: Sequence[float], after: Sequence[float]) -> tuple[float, float]:
    """Effect ``mean(after - before)`` over paired seeds (S,) and the SE of the paired difference (nan for S < 2)."""
    a, b = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired values differ in shape: {a.shape} vs {b.shape}")
    return seed_mean_se(b - a)


def significant(effect: float, se: float, bar: float = BAR) -> bool:
    """|effect| >= ``bar`` SE (False when the SE is undefined; a zero SE with a non-zero effect is significant)."""
    if not np.isfinite(effect) or not np.isfinite(se):
        return False
    return abs(effect) >= bar * se and (se > 0 or effect != 0)


def null_values(null: np.ndarray) -> np.ndarray:
    """``null`` (S, K): seed s's value under shuffle k, nan where the probe did not apply. Returns the ``(K',)``
    seed-averaged values of the shuffles that applied anywhere (shuffle k averaged over the seeds as a real reading
    is)."""
    arr = np.asarray(null, dtype=float)
    if arr.ndim != 2 or arr.size == 0:
        return np.zeros(0)
    with np.errstate(invalid="ignore"):
        per_shuffle = np.array([np.nanmean(col) if np.isfinite(col).any() else np.nan for col in arr.T])
    return per_shuffle[np.isfinite(per_shuffle)]


def null_summary(null: np.ndarray, percentile: float = NULL_PERCENTILE) -> tuple[float, float, int]:
    """The mean and ``percentile`` of :func:`null_values` of ``null (S, K)``, and K used."""
    per_shuffle = null_values(null)
    if per_shuffle.size == 0:
        return float("nan"), float("nan"), 0
    return float(per_shuffle.mean()), float(np.percentile(per_shuffle, percentile)), int(per_shuffle.size)


def verdict(mean: float, p_low: float, p_high: float) -> str:
    """``ok`` inside ``[p_low, p_high]``, ``ABOVE`` over ``p_high`` (the acceptance bar), ``BELOW`` under ``p_low``
    (an inverted tell); ``no null`` when the band is undefined."""
    if not (np.isfinite(p_low) and np.isfinite(p_high)):
        return "no null"
    return "ABOVE" if mean > p_high else ("BELOW" if mean < p_low else "ok")


def _value(audit: dict[str, Any], probe: str) -> float:
    """One probe's value in a ``real_photos._audit`` result, nan when it did not apply."""
    cell = audit.get(probe, {})
    return float(cell["value"]) if isinstance(cell, dict) and "value" in cell else float("nan")


# --- running ----------------------------------------------------------------------------------------------------


def setting_args(setting: str) -> list[str]:
    """The ``procbench generate`` options of one setting name (the folder name the generator writes)."""
    if setting == "adversarial":
        return ["--adversarial"]
    if setting in ("needs-context", "recipeqa"):
        return ["--style", setting]
    if setting.startswith("knobs-"):
        return ["--knobs", ",".join(setting.removeprefix("knobs-").split("-"))]
    raise SystemExit(f"unknown setting {setting!r}: adversarial, needs-context, recipeqa or knobs-K1-K2-K3")


def recipe_kind(setting: str) -> str:
    """The recipe kind (``procbench.generate.recipes.KINDS``) of a setting name."""
    if setting.startswith("knobs-"):
        return "rank-uniform" if setting.endswith("-2") else "knobs"
    return setting


def _tuples(value: Any) -> Any:
    """JSON lists as the tuples a recipe's fields hold (nested: ``sources``)."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def parse_seeds(text: str) -> list[int]:
    """``"0-9"`` or ``"0,1,5"`` (or both, comma-separated) -> sorted distinct seeds."""
    seeds: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        seeds.update(range(int(lo), int(hi or lo) + 1))
    return sorted(seeds)


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """``NAME=VALUE`` pairs; VALUE read as JSON (numbers, booleans, lists), else kept as a string."""
    out: dict[str, Any] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep or not name:
            raise SystemExit(f"--override {item!r}: expected NAME=VALUE")
        try:
            out[name] = json.loads(raw)
        except json.JSONDecodeError:
            out[name] = raw
    return out


def _commit(root: Path) -> str:
    done = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%H"], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def _generate(
    code: Path, store: Path, task: str, setting: str, seed: int, overrides: dict[str, Any], recipe: dict[str, Any]
) -> float:
    """Generate one set in a child process on the code under ``code`` (in-process under the policy ``overrides``
    and the ``recipe`` field overrides when there are any); writes ``generate.json`` (the command's counts, which
    ``real_photos._yield`` reads) into the set's folder; returns the wall seconds."""
    args = ["generate", "--task", task, *setting_args(setting), "--seed", str(seed), "--store", str(store), "--json"]
    if overrides or recipe:
        cmd = [sys.executable, str(Path(__file__).resolve()), "_generate", "--code", str(code)]
        cmd += [f"--override={k}={json.dumps(v)}" for k, v in overrides.items()]
        cmd += [f"--recipe={k}={json.dumps(v)}" for k, v in recipe.items()]
        cmd += [f"--recipe-key={task}:{recipe_kind(setting)}", "--", *args]
    else:
        cmd = [sys.executable, "-m", "procbench", *args]
    env = {**os.environ, "PYTHONPATH": str(code), "PROCBENCH_PROGRESS": "off"}
    start = time.monotonic()
    done = subprocess.run(cmd, env=env, cwd=code, capture_output=True, text=True)
    wall = time.monotonic() - start
    if done.returncode != 0:
        raise RuntimeError(f"generate {task} {setting} seed {seed}: exit {done.returncode}: {done.stderr[-600:]}")
    summary = json.loads(done.stdout)
    (store / "questions" / task / setting / "generate.json").write_text(json.dumps(summary["counts"]))
    return wall


def _generate_in_process(argv: list[str]) -> None:
    """Child of :func:`_generate`: the CLI under ``procbench.generate.policy.overridden`` and
    ``procbench.generate.recipes.overridden`` (the recipe of ``--recipe-key TASK:KIND``)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--code", type=Path, required=True)
    parser.add_argument("--override", action="append", default=[])
    parser.add_argument("--recipe", action="append", default=[])
    parser.add_argument("--recipe-key", default="")
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.code))
    from contextlib import ExitStack

    from procbench.cli import main
    from procbench.generate import policy, recipes  # type: ignore[attr-defined,unused-ignore]

    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    sys.argv = ["procbench", *rest]
    with ExitStack() as stack:
        stack.enter_context(policy.overridden(**parse_overrides(args.override)))
        if args.recipe:
            fields = {k: _tuples(v) for k, v in parse_overrides(args.recipe).items()}
            task, _, kind = args.recipe_key.partition(":")
            stack.enter_context(recipes.overridden(task, kind, **fields))
        try:
            main()
        except SystemExit as stop:
            if stop.code not in (0, None):
                raise


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=float))
    os.replace(tmp, path)


def run(args: argparse.Namespace) -> None:
    """Generate, audit and null-audit every seed not yet in ``args.out``."""
    code, audit_code = args.code.resolve(), (args.audit_code or args.code).resolve()
    if "procbench" in sys.modules:
        raise SystemExit("procbench already imported: the audit code cannot be chosen")
    sys.path.insert(0, str(audit_code))
    import procbench

    if Path(procbench.__file__).resolve().parents[1] != audit_code:
        raise SystemExit(f"procbench imported from {procbench.__file__}, not {audit_code}")
    overrides, recipe = parse_overrides(args.override), parse_overrides(args.recipe)
    data: dict[str, Any] = json.loads(args.out.read_text()) if args.out.is_file() else {}
    head = {
        "code": str(code),
        "commit": _commit(code),
        "audit_code": str(audit_code),
        "audit_commit": _commit(audit_code),
        "store": str(args.store.resolve()),
        "task": args.task,
        "setting": args.setting,
        "overrides": overrides,
        "nulls": args.nulls,
        "null_draw": args.null_draw,
    }
    if recipe:
        head["recipe"] = recipe
    if data:
        data.setdefault("null_draw", "shared")  # a run from before session 26 shared its nulls across seeds
    if data and any(data.get(k) != v for k, v in head.items() if k not in ("nulls",)):
        diff = {k: (data.get(k), v) for k, v in head.items() if data.get(k) != v}
        raise SystemExit(f"{args.out} holds another run: {diff}")
    work = args.work or args.out.with_suffix("")
    data = {**head, "work": str(work.resolve()), "seeds": data.get("seeds", {})}
    for seed in parse_seeds(args.seeds):
        if str(seed) in data["seeds"]:
            continue
        store = work / f"seed{seed}"
        if not (store / "store.json").is_file():
            shutil.rmtree(store, ignore_errors=True)
            shutil.copytree(args.store, store, ignore=shutil.ignore_patterns("questions"))
        folder = store / "questions" / args.task / args.setting
        gen = (
            0.0
            if (folder / "generate.json").is_file()
            else _generate(code, store, args.task, args.setting, seed, overrides, recipe)
        )
        start = time.monotonic()
        audit = real_photos._audit(folder)
        audit_wall = time.monotonic() - start
        salt = seed if args.null_draw == "per-seed" else None
        nulls = [real_photos._audit(folder, j, salt) for j in range(args.nulls)]
        wall = {"generate": gen, "audit": audit_wall, "nulls": time.monotonic() - start - audit_wall}
        record = {"audit": audit, "nulls": nulls, "wall": wall}
        data["seeds"][str(seed)] = record
        _write(args.out, data)
        worst = max((_value(audit, p) for p in PROBES if np.isfinite(_value(audit, p))), default=float("nan"))
        print(
            f"seed {seed}: n={audit['n']} worst probe {worst:.3f}; generate {gen:.0f} s, audit {audit_wall:.0f} s, "
            f"{args.nulls} nulls {wall['nulls']:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


# --- reading ----------------------------------------------------------------------------------------------------


def summarise(data: dict[str, Any]) -> dict[str, dict[str, float | str | int]]:
    """Per probe: ``mean``, ``se`` over seeds, ``null_mean``, ``null_p5``, ``null_p95``, nulls used and the
    two-sided ``verdict`` (:func:`verdict`)."""
    seeds = sorted(data["seeds"], key=int)
    out: dict[str, dict[str, float | str | int]] = {}
    for probe in PROBES:
        vals = [v for s in seeds if np.isfinite(v := _value(data["seeds"][s]["audit"], probe))]
        if not vals:
            continue
        mean, se = seed_mean_se(vals)
        k = min((len(data["seeds"][s]["nulls"]) for s in seeds), default=0)
        null = np.array([[_value(data["seeds"][s]["nulls"][j], probe) for j in range(k)] for s in seeds])
        shuffles = null_values(null) if k else np.zeros(0)
        used = int(shuffles.size)
        band = (NULL_LOW_PERCENTILE, NULL_PERCENTILE)
        null_mean, p5, p95 = (
            (float(shuffles.mean()), *(float(np.percentile(shuffles, q)) for q in band)) if used else (np.nan,) * 3
        )
        out[probe] = {
            "mean": mean,
            "se": se,
            "seeds": len(vals),
            "null_mean": null_mean,
            "null_p5": p5,
            "null_p95": p95,
            "nulls": used,
            "verdict": verdict(mean, p5, p95),
        }
    return out


def questions(data: dict[str, Any]) -> float:
    """Mean questions per set over the run's seeds."""
    return float(np.mean([r["audit"]["n"] for r in data["seeds"].values()])) if data["seeds"] else 0.0


def summary_table(data: dict[str, Any]) -> list[str]:
    """Markdown lines: the run's header and one row per probe."""
    seeds = sorted(int(s) for s in data["seeds"])
    walls = [r["wall"] for r in data["seeds"].values()]
    gen, aud, nul = (float(np.sum([w[k] for w in walls])) for k in ("generate", "audit", "nulls"))
    lines = [
        f"`{data['task']}/{data['setting']}` on `{Path(data['store']).name}`, code `{data['commit'][:7]}` "
        f"(audit `{data['audit_commit'][:7]}`), overrides {data['overrides'] or 'none'}, recipe "
        f"{data.get('recipe') or 'default'}; seeds {seeds}, "
        f"{questions(data):.1f} questions per set, {data['nulls']} nulls per set; wall: generate {gen:.0f} s, "
        f"audit {aud:.0f} s, nulls {nul:.0f} s",
        "",
        "| probe | mean | SE | null mean | null p5 | null p95 | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for probe, row in summarise(data).items():
        lines.append(
            f"| {probe} | {row['mean']:.3f} | {row['se']:.3f} | {row['null_mean']:.3f} | {row['null_p5']:.3f} "
            f"| {row['null_p95']:.3f} | {row['verdict']} |"
        )
    return lines


def compare(before: dict[str, Any], after: dict[str, Any]) -> dict[str, dict[str, float | int | bool]]:
    """Per probe: paired ``effect`` (after - before), its ``se``, ``pairs`` and ``significant`` (|effect| >= 2 SE)."""
    seeds = sorted(set(before["seeds"]) & set(after["seeds"]), key=int)
    out: dict[str, dict[str, float | int | bool]] = {}
    for probe in PROBES:
        pairs = [
            (a, b)
            for s in seeds
            if np.isfinite(a := _value(before["seeds"][s]["audit"], probe))
            and np.isfinite(b := _value(after["seeds"][s]["audit"], probe))
        ]
        if not pairs:
            continue
        a_vals, b_vals = zip(*pairs, strict=True)
        effect, se = paired_effect(a_vals, b_vals)
        out[probe] = {
            "before": float(np.mean(a_vals)),
            "after": float(np.mean(b_vals)),
            "effect": effect,
            "se": se,
            "pairs": len(pairs),
            "significant": significant(effect, se),
        }
    return out


def identical_sets(before: dict[str, Any], after: dict[str, Any]) -> tuple[int, int]:
    """Of the seeds both runs hold with their per-seed stores kept (``--keep``), how many wrote byte-identical
    question files (train/val/test parquet): ``(identical, checked)``."""
    same = checked = 0
    for seed in sorted(set(before["seeds"]) & set(after["seeds"]), key=int):
        folders = [
            Path(r.get("work", "")) / f"seed{seed}" / "questions" / r["task"] / r["setting"] for r in (before, after)
        ]
        files = [sorted(f.glob("*.parquet")) for f in folders]
        if not files[0] or not files[1]:
            continue
        checked += 1
        names = [[p.name for p in f] for f in files]
        same += names[0] == names[1] and all(a.read_bytes() == b.read_bytes() for a, b in zip(*files, strict=True))
    return same, checked


def compare_table(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Markdown lines: one row per probe of :func:`compare`, and how many seeds' sets are byte-identical."""
    same, checked = identical_sets(before, after)
    lines = [
        f"`{before['task']}/{before['setting']}` on `{Path(before['store']).name}`: before `{before['commit'][:7]}` "
        f"{before['overrides'] or ''} {before.get('recipe') or ''}, after `{after['commit'][:7]}` "
        f"{after['overrides'] or ''} {after.get('recipe') or ''}; byte-identical sets on {same} of {checked} seeds "
        "checked",
        "",
        "| probe | before | after | effect | SE | pairs | abs(effect) >= 2 SE |",
        "|---|---|---|---|---|---|---|",
    ]
    for probe, row in compare(before, after).items():
        lines.append(
            f"| {probe} | {row['before']:.3f} | {row['after']:.3f} | {row['effect']:+.3f} | {row['se']:.3f} "
            f"| {row['pairs']} | {'yes' if row['significant'] else 'no'} |"
        )
    return lines


def ledger_record(before: dict[str, Any], after: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """One evidence-ledger record: the effect on ``args.probe`` (default: the probe with the largest |effect|/SE)."""
    effects = compare(before, after)
    if not effects:
        raise SystemExit("no probe measured on both runs")
    probe = args.probe or max(effects, key=lambda p: abs(effects[p]["effect"]) / max(effects[p]["se"], 1e-12))
    if probe not in effects:
        raise SystemExit(f"probe {probe!r} not measured on both runs: {sorted(effects)}")
    row = effects[probe]
    kind, name = ("constant", args.constant) if args.constant else ("rule", args.rule)
    seeds = sorted(set(before["seeds"]) & set(after["seeds"]), key=int)
    return {
        kind: name,
        "value_before": args.value_before,
        "value_after": args.value_after,
        "corpus": args.corpus or Path(before["store"]).name,
        "task": before["task"],
        "setting": before["setting"],
        "probe": probe,
        "questions": round((questions(before) + questions(after)) / 2, 1),
        "seeds": [int(s) for s in seeds],
        "effect": round(float(row["effect"]), 4),
        "se": round(float(row["se"]), 4),
        "verdict": args.verdict or ("kept" if row["significant"] else "removed"),
        "reason": args.reason,
        "commit": after["commit"],
    }


def _load(path: Path) -> dict[str, Any]:
    """A run's JSON; its per-seed stores default to the ``run`` default (OUT without suffix)."""
    data: dict[str, Any] = json.loads(path.read_text())
    data.setdefault("work", str(path.with_suffix("").resolve()))
    return data


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_generate"]:
        _generate_in_process(argv[1:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="generate, audit and null-audit a set over seeds")
    r.add_argument("--code", type=Path, required=True, help="checkout whose procbench generates")
    r.add_argument("--audit-code", type=Path, default=None, help="checkout whose procbench audits (default --code)")
    r.add_argument("--store", type=Path, required=True)
    r.add_argument("--task", required=True)
    r.add_argument("--setting", required=True, help="needs-context, adversarial, recipeqa or knobs-K1-K2-K3")
    r.add_argument("--seeds", default="0-9")
    r.add_argument("--nulls", type=int, default=20, help="null copies audited per set")
    r.add_argument(
        "--null-draw",
        choices=("per-seed", "shared"),
        default="per-seed",
        help="per-seed: each generation seed's null copies relabelled independently; shared: shuffle j the same on "
        "every seed (the draw before session 26, for resuming its runs)",
    )
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--work", type=Path, default=None, help="per-seed stores (default: OUT without suffix)")
    r.add_argument("--keep", action="store_true", help="keep the per-seed stores")
    r.add_argument("--override", action="append", default=[], help="NAME=VALUE under policy.overridden")
    r.add_argument(
        "--recipe", action="append", default=[], help="FIELD=JSON under recipes.overridden (this task and setting)"
    )
    s = sub.add_parser("summary", help="per probe: mean, SE, null mean and 95th percentile, verdict")
    s.add_argument("runs", type=Path, nargs="+")
    c = sub.add_parser("compare", help="paired effects of two runs (AFTER - BEFORE)")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    c.add_argument("--ledger", type=Path, default=None, help="append a record to this JSONL file")
    named = c.add_mutually_exclusive_group()
    named.add_argument("--constant")
    named.add_argument("--rule")
    c.add_argument("--value-before", type=json.loads, default=None)
    c.add_argument("--value-after", type=json.loads, default=None)
    c.add_argument("--probe", default=None)
    c.add_argument("--verdict", choices=("kept", "removed", "untuned"), default=None)
    c.add_argument("--reason", default="")
    c.add_argument("--corpus", default=None, help="the corpus's name in the record (default: the store's folder)")
    args = parser.parse_args(argv)
    if args.command == "run":
        run(args)
    elif args.command == "summary":
        for path in args.runs:
            print("\n".join(summary_table(json.loads(path.read_text()))) + "\n")
    else:
        before, after = (_load(p) for p in (args.before, args.after))
        print("\n".join(compare_table(before, after)))
        if args.ledger:
            if not (args.constant or args.rule):
                raise SystemExit("--ledger needs --constant NAME or --rule NAME")
            record = ledger_record(before, after, args)
            with args.ledger.open("a") as fh:
                fh.write(json.dumps(record) + "\n")
            print(json.dumps(record))


if __name__ == "__main__":
    main()
