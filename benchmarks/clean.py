"""Benchmark and measure ``procbench clean``.

Default: generate a noisy corpus of 500,000 steps (HTML fragments, mojibake, fused words, numbers glued
to units, numbered titles, bullets, non-English procedures, duplicates), write it to a temporary store
and time ``clean_store`` on it: steps/s and peak RSS.

``--jsonl FILE`` (or ``--sample`` for the bundled sample corpus): inject the same kinds of noise into
real procedures, ingest and clean them, and report the in-vocabulary ratio before/after, the precision
and recall of fused-word splits against the injected fusions, and what the filters removed compared with
what was injected (wrongly removed originals are listed).

    python benchmarks/clean.py                       # 500,000 generated steps
    python benchmarks/clean.py --steps 50000
    python benchmarks/clean.py --jsonl procedures.jsonl --show-splits

``--step-numbers``: the ``step_numbers`` rule on the real corpora beside the repository (build guides,
wikiHow/OpenPI, RecipeQA; or ``--corpus DIR``, repeatable): each is ingested into a temporary store and
cleaned as it is; reported are the step texts the rule changed (steps, procedures, tokens, examples) and
the kept step texts that still start with something like a step number. A second run per corpus numbers
every step text as a headline list does (``2. Find a photo.``, the step's own position) and reports how
many of those numbers are left and how many texts changed beyond losing their number. ``order_tells``:
the audit probe of that name on sequencing and pair-order sets generated from the cleaned corpus, with
the clean texts and with the raw ones (the share of questions whose answer order the texts give away).

    python benchmarks/clean.py --step-numbers

``--gold``: every rule's precision (95% Wilson interval) on ``clean_gold.jsonl``, the hand-labelled real changes
of the rules (RecipeQA recipes, wikiHow/OpenPI, both build-guide corpora; docs/cleaning.md says how they were
sampled and labelled), fused words before and after the precision gate, the share of today's correct fused-word
splits the gate keeps, and the same on the RecipeQA half the gate was tuned on and the held-out half.

    python benchmarks/clean.py --gold [--corpus-lexicon]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from procbench.clean import Segmenter, clean_store, clean_tables
from procbench.store import PROCEDURES, STEPS, Store, conform

from _common import ROOT, peak_rss_mb


# -- a generated How-To corpus --------------------------------------------------------------------------
def _pool(text: str) -> list[str]:
    return text.split()


_NOUNS = _pool(
    "board shelf frame drawer hinge screw nail dowel plank beam panel bracket clamp chisel saw drill bit sander "
    "router jig ruler pencil tape glue varnish stain primer brush roller rag sponge bucket ladder hook bolt washer "
    "fabric ribbon thread needle button zipper seam hem pattern pin yarn wreath garland ornament candle lantern "
    "vase jar bottle lid label tray basket box crate pillow curtain rug lamp shade mirror tile grout caulk pipe "
    "valve faucet hose pot pan skillet oven stove bowl whisk spatula ladle knife cutting dough batter flour sugar "
    "butter egg milk cream cheese onion garlic tomato pepper carrot potato apple lemon orange berry chocolate "
    "vanilla cinnamon sauce broth soup rice pasta noodle bread muffin cookie cake pie crust filling icing glaze "
    "syrup honey oil vinegar salt spice herb leaf stem branch pumpkin gourd moss pebble shell feather twine wire "
    "bead sequin felt cardboard paper envelope stencil sticker magnet battery switch cable socket bulb timer"
)
_ADJECTIVES = _pool(
    "small large thin thick wide narrow long short flat round square smooth rough soft hard warm cold hot dry wet "
    "clean sturdy loose tight heavy light dark bright fresh ripe sweet salty crisp tender golden brown white red "
    "green blue wooden metal plastic glass paper cotton woolen sharp dull spare extra leftover"
)
_VERBS = _pool(
    "cut sand glue paint measure mix stir bake drill fold attach place pour chop whisk clamp trim wipe heat cover "
    "press mark screw hang slice dice peel grate knead roll shape spread brush sprinkle season simmer boil fry "
    "roast chill freeze thaw rinse drain soak sew stitch pin thread tie wrap tape staple fill empty level align "
    "tighten loosen remove replace check test arrange decorate twist bend"
)
_ADVERBS = _pool(
    "carefully gently slowly firmly evenly quickly thoroughly lightly loosely neatly tightly completely briefly "
    "steadily roughly finely"
)
_PREPOSITIONS = _pool("on in into onto over under around beside behind between against along across inside through")
_UNITS = _pool("minutes inches degrees cups pieces hours centimeters grams ounces layers")
_EXTRAS = [
    "Let it rest for a while before you continue.",
    "Check that everything is level.",
    "Wear gloves to protect your hands.",
    "Preheat the oven to 350 degrees first.",
    "Make sure the surface is clean and dry.",
    "Repeat on the other side.",
    "Take your time with this step.",
]


def _sentence(rng: random.Random) -> str:
    n, v, a = rng.choice, rng.choice(_VERBS), rng.choice(_ADJECTIVES)
    form = rng.randrange(5)
    if form == 0:
        text = f"{v.capitalize()} the {a} {n(_NOUNS)} {n(_ADVERBS)} {n(_PREPOSITIONS)} the {n(_NOUNS)}."
    elif form == 1:
        text = f"{v.capitalize()} {rng.randint(2, 12)} {n(_UNITS)} of {n(_NOUNS)} and {n(_VERBS)} it {n(_ADVERBS)}."
    elif form == 2:
        text = f"Use a {a} {n(_NOUNS)} to {v} the {n(_NOUNS)} so that the {n(_NOUNS)} stays {n(_ADJECTIVES)}."
    elif form == 3:
        text = f"If the {n(_NOUNS)} is too {a}, {v} it again {n(_PREPOSITIONS)} the {n(_ADJECTIVES)} {n(_NOUNS)}."
    else:
        text = f"Let the {n(_NOUNS)} {v} for {rng.randint(2, 30)} {n(_UNITS)} before you {n(_VERBS)} the {n(_NOUNS)}."
    if rng.random() < 0.2:
        text += " " + rng.choice(_EXTRAS)
    return text


_CATEGORIES = [
    ["Hobbies and Crafts", "Woodworking"],
    ["Food and Entertaining", "Recipes"],
    ["Home and Garden", "Decorating"],
    ["Holidays and Traditions", "Christmas"],
]
_FOREIGN = {
    "fr": [
        "Coupez la planche en deux morceaux avec une scie bien aiguisée.",
        "Mélangez la farine et le sucre dans un grand bol.",
        "Laissez sécher la colle pendant une heure.",
        "Poncez les bords jusqu'à ce qu'ils soient lisses.",
        "Versez la pâte dans le moule et faites cuire.",
    ],
    "de": [
        "Schneiden Sie das Brett mit einer scharfen Säge in zwei Teile.",
        "Mischen Sie das Mehl und den Zucker in einer großen Schüssel.",
        "Lassen Sie den Leim eine Stunde trocknen.",
        "Schleifen Sie die Kanten, bis sie glatt sind.",
        "Gießen Sie den Teig in die Form und backen Sie ihn.",
    ],
    "es": [
        "Corta la tabla en dos partes con una sierra bien afilada.",
        "Mezcla la harina y el azúcar en un recipiente grande.",
        "Deja secar el pegamento durante una hora.",
        "Lija los bordes hasta que queden lisos.",
        "Vierte la masa en el molde y hornéala.",
    ],
    "it": [
        "Taglia la tavola in due pezzi con una sega affilata.",
        "Mescola la farina e lo zucchero in una ciotola grande.",
        "Lascia asciugare la colla per un'ora.",
        "Leviga i bordi finché non sono lisci.",
        "Versa l'impasto nello stampo e cuoci in forno.",
    ],
    "nl": [
        "Zaag de plank met een scherpe zaag in twee stukken.",
        "Meng de bloem en de suiker in een grote kom.",
        "Laat de lijm een uur drogen.",
        "Schuur de randen tot ze glad zijn.",
        "Giet het beslag in de vorm en bak het.",
    ],
}


def generate_records(n_steps: int, seed: int = 0) -> list[dict[str, Any]]:
    """Clean generated procedures (5-15 steps) with ``n_steps`` steps in total, as import records."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    total = 0
    while total < n_steps:
        n = min(rng.randint(5, 15), n_steps - total) if n_steps - total >= 5 else n_steps - total
        topic = f"{rng.choice(_ADJECTIVES).capitalize()} {rng.choice(_NOUNS).capitalize()}"
        steps = [
            {
                "title": f"{rng.choice(_VERBS).capitalize()} the {rng.choice(_NOUNS)}",
                "text": " ".join(_sentence(rng) for _ in range(rng.randint(1, 3))),
            }
            for _ in range(n)
        ]
        records.append(
            {
                "source": "bench",
                "id": f"gen-{len(records)}",
                "title": f"How to {rng.choice(_VERBS).capitalize()} a {topic}",
                "category": rng.choice(_CATEGORIES),
                "steps": steps,
            }
        )
        total += n
    return records


# -- noise ----------------------------------------------------------------------------------------------
_FUSABLE = re.compile(r"^[a-z]+$")
_GLUABLE = re.compile(r"\b(\d+) (degrees|cups|minutes|inches|hours|pieces|mm|cm|g|oz|ml)\b")


def _mojibake(text: str) -> str:
    """UTF-8 bytes read as cp1252, dropping the bytes cp1252 leaves undefined (``ﬁ`` -> ``ï¬``)."""
    out = []
    for byte in text.encode("utf-8"):
        try:
            out.append(bytes([byte]).decode("cp1252"))
        except UnicodeDecodeError:
            continue
    return "".join(out)


def fuse_words(text: str, rng: random.Random, rate: float, log: list[tuple[str, str]]) -> str:
    """Remove the spaces between 2-3 lowercase words at ``rate`` per word; log (fused, original)."""
    words = text.split(" ")
    out: list[str] = []
    i = 0
    while i < len(words):
        run = rng.randint(2, 3)
        chunk = words[i : i + run]
        core = [w.rstrip(".,;:!?") for w in chunk]
        if (
            rng.random() < rate
            and len(chunk) == run
            and all(_FUSABLE.match(c) for c in core[:-1])
            and _FUSABLE.match(core[-1])
            and chunk[:-1] == core[:-1]
        ):
            fused = "".join(chunk)
            log.append(("".join(core), " ".join(core)))
            out.append(fused)
            i += run
        else:
            out.append(words[i])
            i += 1
    text = " ".join(out)

    def glue(m: re.Match[str]) -> str:
        if rng.random() < 0.5:
            log.append((m.group(1) + m.group(2), m.group()))
            return m.group(1) + m.group(2)
        return m.group()

    return _GLUABLE.sub(glue, text)


_HTML = [
    lambda t, r: f"<p>{t}</p>",
    lambda t, r: t.replace(" ", "&nbsp;", 1),
    lambda t, r: f"{t}<br/>",
    lambda t, r: re.sub(r"\b(\w{5,})\b", r"<b>\1</b>", t, count=1),
    lambda t, r: f'<div class="step">{t}</div>',
    lambda t, r: f"<style>.step {{margin: 0; padding: 4px;}}</style>{t}",
    lambda t, r: f"######WH.shared.addScrollLoadItem('img_{r.randrange(16**8):08x}')######{t}",
    lambda t, r: t.replace("'", "&#x27;").replace(" and ", " &amp; "),
    lambda t, r: f"{t}[{r.randint(1, 9)}]",
]


def noisy_text(text: str, rng: random.Random, log: list[tuple[str, str]], rates: dict[str, float]) -> str:
    """Inject fused words, HTML, mojibake and whitespace noise into one step text."""
    text = fuse_words(text, rng, rates["fuse"], log)
    if rng.random() < rates["html"]:
        text = rng.choice(_HTML)(text, rng)
    if rng.random() < rates["mojibake"]:
        text = _mojibake(text.replace("'", "\u2019").replace("fi", "\ufb01").replace(" - ", " \u2014 "))
    if rng.random() < rates["whitespace"]:
        text = rng.choice(
            [
                lambda t: "\u2022 " + t.replace(". ", ".\n\u2022 "),
                lambda t: "  " + t.replace(" ", "  ", 3),
                lambda t: t.replace(". ", ".\n\n\n"),
                lambda t: t + " \t ",
            ]
        )(text)
    return text


_NUMBERS = ["One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten"]


def numbered_title(title: str, index: int, rng: random.Random) -> str:
    """A step title with a position indicator."""
    form = rng.randrange(5)
    if form == 0:
        return f"Step {index + 1}: {title}"
    if form == 1:
        return f"{index + 1}. {title}"
    if form == 2 and index < 10:
        return f"Step {_NUMBERS[index]} - {title}"
    if form == 3:
        return f"Part {index + 1} of 3: {title}"
    return f"STEP {index + 1} {title}"


def inject_noise(
    records: list[dict[str, Any]],
    *,
    seed: int = 0,
    foreign: float = 0.03,
    duplicates: float = 0.03,
    titles: float = 0.5,
    **rates: float,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Noisy copies of ``records`` plus injected non-English procedures and lightly edited duplicates.

    Returns the records and the truth: fusions (fused -> original), ids of injected foreign procedures
    and of injected duplicates (and what they copy).
    """
    rng = random.Random(seed)
    rates = {"fuse": 0.04, "html": 0.15, "mojibake": 0.05, "whitespace": 0.1, **rates}
    fusions: list[tuple[str, str]] = []
    out: list[dict[str, Any]] = []
    for record in records:
        record = json.loads(json.dumps(record))
        numbered = rng.random() < titles
        for i, step in enumerate(record["steps"]):
            step["text"] = noisy_text(step["text"], rng, fusions, rates)
            if step.get("title") and numbered:
                step["title"] = numbered_title(step["title"], i, rng)
        out.append(record)
    foreign_ids, duplicate_ids = [], {}
    for k in range(int(len(records) * foreign)):
        lang = sorted(_FOREIGN)[k % len(_FOREIGN)]
        sentences = _FOREIGN[lang]
        steps = [{"title": None, "text": " ".join(rng.sample(sentences, 2))} for _ in range(rng.randint(4, 6))]
        record = {"source": "injected", "id": f"foreign-{lang}-{k}", "title": rng.choice(_NOUNS), "steps": steps}
        foreign_ids.append(f"injected:{record['id']}")
        out.append(record)
    for k, original in enumerate(rng.sample(records, int(len(records) * duplicates))):
        copy = json.loads(json.dumps(original))
        copy["id"], copy["source"] = f"copy-{k}", "injected"
        edit = k % 3
        if edit == 0 and len(copy["steps"]) > 3:
            copy["steps"].pop(rng.randrange(len(copy["steps"])))  # a step lost
        elif edit == 1:
            for step in copy["steps"]:  # re-scraped with markup and a changed word or two
                step["text"] = "<p>" + step["text"].replace(" the ", " a ", 1) + "</p>"
        copy["url"] = None
        duplicate_ids[f"injected:{copy['id']}"] = f"{original.get('source', 'wikihow')}:{original['id']}"
        out.append(copy)
    truth = {"fusions": dict(fusions), "foreign": foreign_ids, "duplicates": duplicate_ids}
    return out, truth


# -- running ---------------------------------------------------------------------------------------------
def _tables(records: list[dict[str, Any]]) -> tuple[pa.Table, pa.Table]:
    procs: dict[str, list[Any]] = {
        n: []
        for n in (
            "id",
            "source",
            "url",
            "title",
            "category",
            "author",
            "license",
            "language",
            "n_steps",
            "fetched_at",
            "split",
        )
    }
    steps: dict[str, list[Any]] = {n: [] for n in ("procedure_id", "index", "title", "text", "image_ids")}
    for r in records:
        pid = f"{r['source']}:{r['id']}"
        for name, value in (
            ("id", pid),
            ("source", r["source"]),
            ("url", r.get("url")),
            ("title", r["title"]),
            ("category", r.get("category") or []),
            ("author", None),
            ("license", None),
            ("language", None),
            ("n_steps", len(r["steps"])),
            ("fetched_at", None),
            ("split", None),
        ):
            procs[name].append(value)
        for i, s in enumerate(r["steps"]):
            for name, value in (
                ("procedure_id", pid),
                ("index", i),
                ("title", s.get("title")),
                ("text", s["text"]),
                ("image_ids", []),
            ):
                steps[name].append(value)
    procs_table = pa.table(procs, schema=pa.schema([PROCEDURES.field(n) for n in procs]))
    steps_table = pa.table(steps, schema=pa.schema([STEPS.field(n) for n in steps]))
    return conform(procs_table, PROCEDURES), conform(steps_table, STEPS)


def _write_store(path: Path, records: list[dict[str, Any]]) -> Store:
    store = Store.open(path, create=True)
    procedures, steps = _tables(records)
    with store.transaction("bench-setup") as txn:
        txn.write_table("procedures", procedures)
        txn.write_table("steps", steps)
    return store


def speed(n_steps: int, seed: int, *, noise: bool = True) -> dict[str, Any]:
    """Time ``clean_store`` on a generated noisy corpus of ``n_steps`` steps (no injected noise: ``noise=False``).

    The store is written first; cleaning then runs in a fresh process, so its time and peak RSS are its own.
    """
    t0 = time.perf_counter()
    records = generate_records(n_steps, seed)
    records, truth = inject_noise(records, seed=seed) if noise else (records, {"foreign": [], "duplicates": {}})
    gen_s = time.perf_counter() - t0
    injected = {"injected_foreign": len(truth["foreign"]), "injected_duplicates": len(truth["duplicates"])}
    with tempfile.TemporaryDirectory() as tmp:
        _write_store(Path(tmp) / "store", records)
        del records, truth
        out = subprocess.run(
            [sys.executable, __file__, "--clean-store", str(Path(tmp) / "store")],
            capture_output=True,
            text=True,
            check=True,
        )
    return {"generate_s": round(gen_s, 1), **json.loads(out.stdout), **injected}


def _clean_only(path: Path) -> dict[str, Any]:
    store = Store.open(path)
    cpu0, t0 = time.process_time(), time.perf_counter()
    report = clean_store(store)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    workers_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "workers_cpu_seconds": round(workers_cpu.ru_utime + workers_cpu.ru_stime, 2),
        "steps": report.steps,
        "procedures": report.procedures,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 2),
        "steps_per_s": round(report.steps / seconds),
        "steps_per_cpu_s": round(report.steps / cpu),
        "peak_rss_mb": round(peak_rss_mb()),
        "dropped": report.dropped,
        "in_vocabulary": report.in_vocabulary,
    }


def measure(records: list[dict[str, Any]], seed: int, show_splits: bool) -> dict[str, Any]:
    """Inject noise into real records, clean them, and compare with the truth."""
    noisy, truth = inject_noise(records, seed=seed)
    raw_report = clean_tables(*_tables(records)).report  # the same procedures without injected noise
    segmenter = Segmenter()
    result_tables = clean_tables(*_tables(noisy), segmenter=segmenter)
    report = result_tables.report
    procs = result_tables.procedures.select(["id", "keep", "drop_reason"]).to_pylist()
    # split precision: the splits clean applied, checked against the injected fusions
    fusions = {k.lower(): v.lower() for k, v in truth["fusions"].items()}
    made = segmenter.applied
    injected_made = {t: o for t, o in made.items() if t.lower() in fusions}
    correct = sum(1 for t, o in injected_made.items() if o.lower() == fusions[t.lower()])
    natural = {t: o for t, o in made.items() if t.lower() not in fusions}
    dropped = {p["id"]: p["drop_reason"] for p in procs if not p["keep"]}
    originals = {f"{r.get('source', 'wikihow')}:{r['id']}" for r in records}
    result = {
        "procedures": report.procedures,
        "steps": report.steps,
        "in_vocab_raw_corpus_before": raw_report.in_vocabulary["before"],
        "in_vocab_raw_corpus_after": raw_report.in_vocabulary["after_kept"],
        "in_vocab_noisy_before": report.in_vocabulary["before"],
        "in_vocab_after": report.in_vocabulary["after"],
        "in_vocab_after_kept": report.in_vocabulary["after_kept"],
        "fusions_injected": len(fusions),
        "fusions_split": len(injected_made),
        "fusions_split_correctly": correct,
        "split_recall": round(correct / len(fusions), 4) if fusions else None,
        "split_precision_injected": round(correct / len(injected_made), 4) if injected_made else None,
        "splits_of_natural_tokens": len(natural),
        "foreign_injected": len(truth["foreign"]),
        "foreign_dropped": sum(1 for f in truth["foreign"] if dropped.get(f) == "language"),
        "duplicates_injected": len(truth["duplicates"]),
        "duplicates_dropped": sum(
            1 for d, o in truth["duplicates"].items() if dropped.get(d) == "duplicate" or dropped.get(o) == "duplicate"
        ),
        "originals_dropped": {pid: why for pid, why in dropped.items() if pid in originals},
        "dropped_raw_corpus": raw_report.dropped,
        "dropped": report.dropped,
        "rules": {r.rule: [r.procedures, r.steps, r.tokens] for r in report.rules},
    }
    if show_splits:
        result["natural_splits"] = dict(sorted(natural.items()))
        result["wrong_injected_splits"] = {
            t: [o, fusions[t.lower()]] for t, o in injected_made.items() if o.lower() != fusions[t.lower()]
        }
    return result


# -- the step_numbers rule on real corpora ----------------------------------------------------------------
#: The shared real corpora (beside the repository, or beside the folder of its worktrees).
SHARED = next((p / "shared" / "data" for p in ROOT.parents if (p / "shared" / "data").is_dir()), ROOT / "data")
_LEFTOVER = re.compile(r"^\W{0,2}(?:\d{1,3}\s*[.)](?!\d)|step\s*\d|[ivx]{2,4}[.)]\s)", re.IGNORECASE)


def _ingest_cleaned(records: list[dict[str, Any]], folder: Path, tmp: Path) -> tuple[Store, Any]:
    """Ingest ``records`` (images relative to ``folder``) into a store in ``tmp`` and clean it."""
    from procbench.ingest import ingest_file

    def absolute(image: Any) -> Any:
        if isinstance(image, str) and "://" not in image and not Path(image).is_absolute():
            return str(folder / image)
        return image

    records = [
        {**r, "steps": [{**s, "images": [absolute(i) for i in s.get("images") or []]} for s in r["steps"]]}
        for r in records
    ]
    source = tmp / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    store = Store.open(tmp / "store", create=True)
    ingest_file(store, source)
    return store, clean_store(store, workers=1)


def _clean_corpus(records: list[dict[str, Any]], folder: Path) -> tuple[Any, list[tuple[str | None, str | None]]]:
    """Ingest and clean ``records`` in a temporary store; the report and (text, text_clean) of kept steps."""
    from procbench.store.views import kept_steps

    with tempfile.TemporaryDirectory() as tmp:
        store, report = _ingest_cleaned(records, folder, Path(tmp))
        steps = kept_steps(store, ["text", "text_clean"])
        return report, list(zip(steps["text"].to_pylist(), steps["text_clean"].to_pylist(), strict=True))


def order_tells(records: list[dict[str, Any]], folder: Path) -> dict[str, Any]:
    """The ``order_tells`` audit probe on sequencing and pair-order sets generated from the cleaned corpus,
    and on the same questions shown with the raw step texts (what they showed before ``step_numbers``)."""
    from procbench.audit import AuditSet, audit_set, load_question_set
    from procbench.generate import generate

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store, _ = _ingest_cleaned(records, folder, Path(tmp))
        steps = store.table("steps", ["procedure_id", "index", "text"])
        ids, indexes, texts = (steps[c].to_pylist() for c in ("procedure_id", "index", "text"))
        raw = {f"{p}#{i}": t or "" for p, i, t in zip(ids, indexes, texts, strict=True)}
        for task in ("sequencing", "pair-order"):
            aset = load_question_set(generate(store, task, seed=0).paths["default"])
            shown = [[raw[k] for k in q] for q in aset.questions]
            orders = (
                aset.choices if aset.kind.label_choices else [[[raw[k] for k in o] for o in c] for c in aset.choices]
            )
            before = AuditSet("raw", task, aset.procedure_ids, shown, orders, aset.answers)
            row: dict[str, Any] = {"questions": len(aset)}
            for name, which in (("raw_texts", before), ("clean_texts", aset)):
                result = audit_set(which, n_boot=200, probes="order_tells").probes["order_tells"]
                row[name] = {
                    "readable": round(result.value or 0.0, 4),
                    "ci": [round(x, 4) for x in result.ci] if result.ci else None,
                    "share_with_any_tell": round(result.details.get("share_with_any_tell", 0.0), 4),
                    "items_with_tells": result.details.get("items_with_tells"),
                }
            out[task] = row
    return out


def step_numbers(corpora: list[Path]) -> dict[str, Any]:
    """What the ``step_numbers`` rule changes on real corpora, as they are and as numbered headline lists."""
    from procbench.clean import strip_step_numbering

    out: dict[str, Any] = {}
    for corpus in corpora:
        records = [json.loads(line) for line in (corpus / "procedures.jsonl").open(encoding="utf-8") if line.strip()]
        report, kept = _clean_corpus(records, corpus)
        rule = report.rule("step_numbers")
        texts = [t for t in (s.get("text") for r in records for s in r["steps"]) if t]
        leftover = [c for _, c in kept if c and _LEFTOVER.match(c)]
        numbered = [
            {
                **r,
                "steps": [
                    {**s, "text": f"{i + 1}. {s['text']}" if s.get("text") else s.get("text")}
                    for i, s in enumerate(r["steps"])
                ],
            }
            for r in records
        ]
        n_report, n_kept = _clean_corpus(numbered, corpus)
        plain = {raw: clean for raw, clean in kept}
        left = sum(1 for _, c in n_kept if c and re.match(r"\d{1,3}\. ", c))
        # beyond its number, a numbered text should clean as the plain text does
        other = 0
        for raw, clean in n_kept:
            match = re.match(r"\d{1,3}\. (.*)", raw or "", re.DOTALL)
            if match and match.group(1) in plain and plain[match.group(1)] != clean:
                other += 1
        out[corpus.name] = {
            "procedures": report.procedures,
            "steps": report.steps,
            "step_texts": len(texts),
            "texts_whose_raw_form_starts_with_a_number_marker": sum(1 for t in texts if _LEFTOVER.match(t)),
            "changed_by_step_numbers": {"steps": rule.steps, "procedures": rule.procedures, "tokens": rule.tokens},
            "changed_share_of_step_texts": round(rule.steps / len(texts), 4) if texts else None,
            "examples": [{"before": e.before, "after": e.after} for e in rule.examples],
            "kept_texts_still_starting_with_a_marker": len(leftover),
            "leftover_examples": leftover[:5],
            "strip_is_idempotent_on_every_text": all(strip_step_numbering(c) == c for _, c in kept if c),
            "order_tells": order_tells(records, corpus),
            "as_headline_list": {
                "kept_texts": len(n_kept),
                "changed_by_step_numbers": n_report.rule("step_numbers").steps,
                "numbers_left": left,
                "texts_changed_beyond_their_number": other,
            },
        }
    return out


# -- the hand-labelled gold file: precision of every rule, recall of today's correct fused-word splits ---------
GOLD = Path(__file__).with_name("clean_gold.jsonl")
_GOLD_CORPORA = {
    "recipeqa": "recipeqa-recipes",
    "wikihow": "wikihow-openpi",
    "build": "build-guides",
    "build2": "build-guides-2",
}


def _rate(hits: int, n: int) -> dict[str, Any]:
    from procbench.readers.score import wilson_interval

    lo, hi = wilson_interval(hits, n) if n else (0.0, 1.0)
    return {"hits": hits, "n": n, "rate": round(hits / n, 4) if n else None, "wilson95": [round(lo, 4), round(hi, 4)]}


def _lexicons() -> dict[str, frozenset[str]]:
    """Each gold corpus's own lexicon (:func:`corpus_lexicon` on its step texts), where the corpus is here."""
    import pyarrow as pa_

    from procbench.clean.gate import corpus_lexicon

    out: dict[str, frozenset[str]] = {}
    for name, folder in _GOLD_CORPORA.items():
        path = SHARED / folder / "procedures.jsonl"
        if not path.exists():
            continue
        procs = [json.loads(line) for line in path.open(encoding="utf-8")]
        texts = [st.get("text") for p in procs for st in p["steps"]]
        ids = [p["id"] for p in procs for _ in p["steps"]]
        out[name] = corpus_lexicon(pa_.array(texts, pa_.string()), pa_.array(ids))
    return out


def _credited_in(context: str, token: str) -> bool:
    """Whether ``token``'s occurrence in the gold record's context follows a credit cue (``member``)."""
    from procbench.clean.gate import credited

    match = re.search(rf"(?<![^\W_]){re.escape(token)}(?![^\W_])", context)
    return match is not None and credited(context, match.start())


def gold(path: Path, *, corpus_lexicon: bool = False) -> dict[str, Any]:
    """Precision per rule (95% Wilson intervals) on the hand-labelled changes of ``path``, before and after the
    fused-word gate, and the share of today's correct fused-word splits the gate keeps.

    The other text rules are unchanged by the gate, so their precision is that of their labelled changes.
    Fused-word records are re-decided by today's segmenter (``gate=True``) token by token; with
    ``corpus_lexicon`` each corpus's own lexicon is added (needs the corpora in /work/shared/data).
    """
    from procbench.clean import Segmenter, SegmenterSettings

    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    lexicons = _lexicons() if corpus_lexicon else {}
    segmenters: dict[str, Segmenter] = {}
    ungated = Segmenter(settings=SegmenterSettings(gate=False))
    out: dict[str, Any] = {"records": len(records), "rules": {}, "fused_words": {}}
    for rule in sorted({r["rule"] for r in records} - {"fused_words"}):
        rs = [r for r in records if r["rule"] == rule]
        out["rules"][rule] = _rate(sum(r["label"] == "correct" for r in rs), len(rs))
    fused = [r for r in records if r["rule"] == "fused_words"]
    refused: dict[str, dict[str, int]] = {}
    for r in fused:
        lexicon = lexicons.get(r["corpus"], frozenset())
        seg = segmenters.setdefault(r["corpus"], Segmenter(settings=SegmenterSettings(lexicon=lexicon)))
        r["kept"] = seg.split_token(r["token"]) == r["split"]
        why = None
        if r["kept"] and _credited_in(r["before"], r["token"]):
            r["kept"], why = False, "credited"  # split_text leaves a name after "member" or "Photo from" whole
        elif not r["kept"] and r["token"].isalpha():
            word = r["token"].lower()
            found = ungated.best_split(word)
            why = "other" if found is None else (seg.refusal(word, found[1], found[0]) or "other")
        if why is not None:
            counts = refused.setdefault(why, {})
            for key in (r["label"], f"{r['half']}_{r['label']}"):
                counts[key] = counts.get(key, 0) + 1

    def summary(rs: list[dict[str, Any]]) -> dict[str, Any]:
        correct = [r for r in rs if r["label"] == "correct"]
        kept = [r for r in rs if r["kept"]]
        wrong_kept = sorted(r["token"] for r in kept if r["label"] != "correct")
        return {
            "before_gate": _rate(len(correct), len(rs)),
            "after_gate": _rate(sum(r["label"] == "correct" for r in kept), len(kept)),
            "recall_of_correct_splits": _rate(sum(r["kept"] for r in correct), len(correct)),
            "wrong_still_split": wrong_kept,
        }

    letters = [r for r in fused if r["token"].isalpha()]
    out["fused_words"] = {
        "all": summary(fused),
        "letters_only": summary(letters),
        "numbers_glued": summary([r for r in fused if not r["token"].isalpha()]),
        "recipeqa_tune": summary([r for r in fused if r["half"] == "tune"]),
        "recipeqa_held_out": summary([r for r in fused if r["half"] == "held_out"]),
        "other_corpora": summary([r for r in fused if r["half"] == "other"]),
        "refused_by": {why: dict(sorted(c.items())) for why, c in sorted(refused.items())},
        "corpus_lexicon": corpus_lexicon,
    }
    out["rules"]["fused_words"] = out["fused_words"]["all"]["after_gate"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=500_000, help="steps in the generated corpus")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jsonl", type=Path, help="measure on these procedures (import format) with injected noise")
    parser.add_argument("--sample", action="store_true", help="measure on the bundled sample corpus")
    parser.add_argument("--show-splits", action="store_true", help="list the splits of tokens that were not injected")
    parser.add_argument("--no-noise", action="store_true", help="time the generated corpus without injected noise")
    parser.add_argument("--step-numbers", action="store_true", help="the step_numbers rule on the real corpora")
    parser.add_argument(
        "--corpus", action="append", type=Path, help="with --step-numbers: a folder with procedures.jsonl"
    )
    parser.add_argument(
        "--gold", nargs="?", const=GOLD, type=Path, help="precision per rule on the hand-labelled clean_gold.jsonl"
    )
    parser.add_argument("--corpus-lexicon", action="store_true", help="with --gold: add each corpus's own lexicon")
    parser.add_argument("--clean-store", type=Path, help=argparse.SUPPRESS)  # internal: the timed child process
    args = parser.parse_args(argv)
    if args.clean_store:
        out = _clean_only(args.clean_store)
    elif args.gold:
        out = gold(args.gold, corpus_lexicon=args.corpus_lexicon)
    elif args.step_numbers:
        corpora = args.corpus or [SHARED / "build-guides", SHARED / "wikihow-openpi", SHARED / "recipeqa-recipes"]
        out = step_numbers(corpora)
    elif args.jsonl or args.sample:
        if args.sample:
            from procbench.corpus import load_sample

            records = load_sample()
        else:
            records = [
                json.loads(line) for line in args.jsonl.read_text(encoding="utf-8").splitlines() if line.strip()
            ]
        out = measure(records, args.seed, args.show_splits)
    else:
        out = speed(args.steps, args.seed, noise=not args.no_noise)
    json.dump(out, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
