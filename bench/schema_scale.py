"""Enterprise-size schemas: readiness, memory, the context stage and table recall at 100 to 10,000 tables.

    python bench/schema_scale.py [--sizes 100,1000,10000] [--questions 200] [--budget 4000]

Starts an embedded PostgreSQL in a temporary directory and, for each size, builds a database ``scale_<n>`` of
``n`` tables with 20 columns each, named the way warehouses name them (``account_asset_1341``), with a table
comment (``Register of amber ledger entries``: a phrase unique to the table), a few column comments, foreign
keys to earlier tables, and rows in which some low-cardinality text columns hold values (one table in five
has a value found nowhere else, such as ``Copper Falcon 1341``). It is ANALYZEd, as a warehouse is.

A generated question set names its targets the way people do, with the expected tables known:

- ``exact``: the table's name as written (``How many rows are in account_asset_1341?``);
- ``spaced``: its words and number spaced (``How many rows in account asset 1341?``);
- ``comment``: a synonym from its comment (``Average amount in the amber ledger register?``);
- ``value``: a stored value (``How many records have a segment of 'Copper Falcon 1341'?``);
- ``join``: two tables joined by a foreign key, both named spaced (expected: both).

For each size it reports, with the gateway started as a real server process (``uvicorn``, settings from
the environment, a scripted LLM answering at once in a process of its own):

- ``ready s``: from starting the process to the first answered ``POST /v1/sql``;
- ``first q s``: the first ``POST /v1/ask`` right after that, wall time (a large schema is read in the
  background from the start; its questions are answered once it is introspected, before its sample values);
- ``RSS MiB``: the server's resident memory after every question was asked once (schema loaded);
- ``change s``: (in this process, after the context runs) a table created in the running database, the
  seconds until a question's context contains it, without a restart (``context.schema_check_s`` 10 s);

and, with the gateway's state in this process (its real lifespan), the context stage alone
(``build_context``) over every question: ``cold`` the first time each is asked, ``warm`` the second time
(p50/p99, ms), the prompt's estimated tokens (median, max; ``context.token_budget`` bounds the schema
part), **recall** (the share of questions whose prompt contains every expected table) and **precision**
(expected tables over tables in the prompt, averaged).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing.connection
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.mcp import free_port  # noqa: E402
from bench.processes import in_own_process  # noqa: E402
from gateway.demo.embedded import EmbeddedPostgres  # noqa: E402
from gateway.demo.generator import derive_dsn  # noqa: E402

READER = "scale_reader"
MB = 1024 * 1024

# Words of table names: tables share them (as warehouses do), the number tells them apart.
AREAS = ["account", "asset", "invoice", "customer", "order", "shipment", "ledger", "payment", "vendor", "product",
         "employee", "contract", "policy", "claim", "ticket", "campaign", "warehouse", "inventory", "budget",
         "project", "region", "branch", "loan", "deposit", "card", "merchant", "supplier", "route", "vehicle",
         "sensor", "device", "meter", "tariff", "subscriber", "plan", "course", "student", "patient", "visit",
         "doctor"]
THINGS = ["asset", "line", "item", "event", "snapshot", "balance", "history", "detail", "summary", "log",
          "transfer", "entry", "status", "batch", "note", "rate", "score", "target", "metric", "version"]
# Comment phrases: an adjective and a noun per table, unique for up to 100 x 100 tables.
ADJECTIVES = ["amber", "azure", "brisk", "cobalt", "coral", "crimson", "dusky", "ebony", "emerald", "fallow",
              "frosty", "gilded", "glossy", "hazel", "indigo", "ivory", "jade", "khaki", "lilac", "lunar",
              "magenta", "maroon", "misty", "mossy", "navy", "ochre", "olive", "opal", "pearly", "plum",
              "polar", "rosy", "ruby", "russet", "rusty", "sable", "saffron", "scarlet", "sepia", "silver",
              "slate", "smoky", "snowy", "solar", "sunny", "tawny", "teal", "topaz", "umber", "velvet",
              "violet", "wintry", "zesty", "golden", "copper", "bronze", "mellow", "quiet", "rapid", "steady",
              "hollow", "lively", "gentle", "humble", "noble", "proud", "swift", "vivid", "windy", "woolly",
              "breezy", "cloudy", "dewy", "dusty", "fiery", "grassy", "icy", "leafy", "murky", "rainy",
              "rocky", "sandy", "shady", "silky", "stormy", "sultry", "thorny", "balmy", "crisp", "elfin",
              "feral", "hardy", "jolly", "keen", "lanky", "mirthful", "nimble", "plucky", "quirky", "rustic"]
NOUNS = ["ledger", "journal", "register", "roster", "archive", "catalog", "inventory", "digest", "chronicle",
         "manifest", "census", "tally", "record", "almanac", "atlas", "bulletin", "compendium", "dossier",
         "gazette", "index", "logbook", "memoir", "notebook", "portfolio", "quarterly", "review", "scroll",
         "summary", "tableau", "yearbook", "annal", "brief", "charter", "docket", "epistle", "folio",
         "glossary", "handbook", "inventory2", "kit", "lexicon", "missive", "omnibus", "pamphlet", "primer",
         "quire", "repertory", "syllabus", "transcript", "volume", "writ", "abstract", "bestiary", "codex",
         "diary", "edict", "fable", "guide", "hymnal", "itinerary", "jotter", "keynote", "libretto", "monograph",
         "novella", "opus", "parable", "quarto", "rubric", "saga", "treatise", "usage", "vignette", "workbook",
         "xerox", "yarn", "zine", "anthology", "ballad", "canon", "discourse", "essay", "fascicle", "gloss",
         "homily", "idyll", "jest", "koan", "lyric", "maxim", "narrative", "ode", "psalm", "riddle", "sonnet",
         "tract", "utterance", "verse", "wordbook", "zodiac"]
# Columns: 20 per table (id, up to two foreign keys, the rest from this list).
COLUMN_WORDS = ["amount", "quantity", "created_at", "updated_at", "status", "segment", "channel", "currency",
                "owner_name", "description", "unit_price", "discount", "weight", "priority", "category",
                "country_code", "approved", "score_value", "due_date", "reference_code", "tier", "source_system"]
TEXT_COLUMNS = {"status", "segment", "channel", "currency", "owner_name", "description", "category",
                "country_code", "tier", "reference_code", "source_system"}
COMMON_VALUES = {"status": ["open", "closed", "pending"], "channel": ["web", "store", "phone"],
                 "currency": ["EUR", "USD", "GBP"], "category": ["standard", "premium"], "tier": ["gold", "silver"]}
VALUE_FIRST = ["Copper", "Granite", "Willow", "Harbor", "Summit", "Meadow", "Falcon", "Cedar", "Aurora", "Delta"]
VALUE_SECOND = ["Falcon", "Ridge", "Bay", "Crest", "Grove", "Point", "Vale", "Forge", "Harbor", "Spire"]


@dataclass
class Table:
    name: str
    words: tuple[str, str, int]
    phrase: str  # the comment's unique adjective and noun
    columns: list[tuple[str, str]]  # (name, type)
    fks: list[str] = field(default_factory=list)  # referenced tables
    value: tuple[str, str] | None = None  # (column, a value no other table holds)


@dataclass
class Question:
    kind: str
    text: str
    expected: frozenset[str]


def make_tables(n: int, seed: int = 7) -> list[Table]:
    rng = random.Random(seed)
    numbers = rng.sample(range(1000, 100_000), n)
    phrases = [(a, b) for a in ADJECTIVES for b in NOUNS]
    rng.shuffle(phrases)
    tables: list[Table] = []
    for i in range(n):
        area, thing = rng.choice(AREAS), rng.choice(THINGS)
        if area == thing:
            thing = "detail"
        number = numbers[i]
        adjective, noun = phrases[i % len(phrases)]
        columns = [("id", "bigint")]
        fks = [tables[j].name for j in rng.sample(range(i), min(i, rng.choice([0, 1, 2])))] if i else []
        columns += [(f"{ref.rsplit('_', 1)[0]}_{ref.rsplit('_', 1)[1]}_id", "bigint") for ref in fks]
        for word in rng.sample(COLUMN_WORDS, 20 - len(columns)):
            kind = ("text" if word in TEXT_COLUMNS else "date" if word.endswith(("_at", "_date")) else
                    "boolean" if word == "approved" else "numeric(12,2)")
            columns.append((word, kind))
        text_columns = [c for c, t in columns if t == "text"]
        value = None
        if i % 5 == 0 and text_columns:
            value = (text_columns[0], f"{VALUE_FIRST[i % 10]} {VALUE_SECOND[(i // 10) % 10]} {number}")
        tables.append(Table(f"{area}_{thing}_{number}", (area, thing, number), f"{adjective} {noun}", columns, fks,
                            value))
    return tables


def ddl(table: Table) -> str:
    cols = ",\n  ".join(f"{c} {t}" + (" PRIMARY KEY" if c == "id" else "") for c, t in table.columns)
    out = [f"CREATE TABLE {table.name} (\n  {cols}\n);"]
    for ref in table.fks:
        column = f"{ref.rsplit('_', 1)[0]}_{ref.rsplit('_', 1)[1]}_id"
        out.append(f"ALTER TABLE {table.name} ADD FOREIGN KEY ({column}) REFERENCES {ref}(id);")
    area, thing, number = table.words
    out.append(f"COMMENT ON TABLE {table.name} IS 'Register of {table.phrase} entries: the {area} {thing}s "
               f"of unit {number}';")
    for column, _ in table.columns[1:4]:
        out.append(f"COMMENT ON COLUMN {table.name}.{column} IS 'The {column.replace('_', ' ')} as booked';")
    # Twelve rows: low-cardinality text columns get values, each in several rows as in real data (the
    # table's own value, if it has one, in the first nine).
    rows = []
    for r in range(12):
        values = []
        for c, t in table.columns:
            if c == "id":
                values.append(str(r + 1))
            elif c.endswith("_id"):
                values.append("NULL")
            elif table.value is not None and c == table.value[0]:
                values.append("'" + (table.value[1] if r < 9 else "Other") + "'")
            elif t == "text":
                common = COMMON_VALUES.get(c, ["alpha", "beta", "gamma"])
                values.append(f"'{common[r % len(common)]}'")
            elif t == "date":
                values.append(f"date '2024-01-{r + 1:02d}'")
            elif t == "boolean":
                values.append("true" if r % 2 else "false")
            else:
                values.append(str(r * 10))
        rows.append("(" + ", ".join(values) + ")")
    out.append(f"INSERT INTO {table.name} VALUES " + ", ".join(rows) + ";")
    return "\n".join(out)


def make_questions(tables: list[Table], count: int, seed: int = 11) -> list[Question]:
    rng = random.Random(seed)
    out: list[Question] = []
    kinds = ["exact", "spaced", "comment", "value", "join"]
    with_value = [t for t in tables if t.value is not None]
    with_fk = [t for t in tables if t.fks]
    by_name = {t.name: t for t in tables}
    for i in range(count):
        kind = kinds[i % len(kinds)]
        if kind == "value" and with_value:
            t = rng.choice(with_value)
            assert t.value is not None
            column = t.value[0].replace("_", " ")
            out.append(Question(kind, f"How many records have a {column} of '{t.value[1]}'?", frozenset({t.name})))
            continue
        if kind == "join" and with_fk:
            t = rng.choice(with_fk)
            ref = by_name[rng.choice(t.fks)]
            a, b = " ".join(map(str, t.words)), " ".join(map(str, ref.words))
            out.append(Question(kind, f"List the {a} rows with the amount of their {b}",
                                frozenset({t.name, ref.name})))
            continue
        t = rng.choice(tables)
        column = rng.choice([c for c, ty in t.columns if ty.startswith("numeric")] or ["id"]).replace("_", " ")
        if kind == "exact":
            text = f"How many rows are in {t.name}?"
        elif kind == "spaced":
            text = f"What is the total {column} in {' '.join(map(str, t.words))}?"
        else:
            text = f"What is the average {column} in the {t.phrase} register?"
        out.append(Question(kind, text, frozenset({t.name})))
    return out


async def build_database(admin_dsn: str, name: str, tables: list[Table]) -> str:
    admin = await asyncpg.connect(admin_dsn)
    try:
        await admin.execute(f"DROP DATABASE IF EXISTS {name}")
        await admin.execute(f"CREATE DATABASE {name}")
        if not await admin.fetchval("SELECT 1 FROM pg_roles WHERE rolname = $1", READER):
            await admin.execute(f"CREATE ROLE {READER} LOGIN")
    finally:
        await admin.close()
    conn = await asyncpg.connect(derive_dsn(admin_dsn, database=name))
    try:
        await conn.execute(f"GRANT USAGE ON SCHEMA public TO {READER}")
        # Batches small enough for one transaction's locks (max_locks_per_transaction).
        for start in range(0, len(tables), 20):
            batch = tables[start:start + 20]
            await conn.execute("\n".join(ddl(t) for t in batch)
                               + f"\nGRANT SELECT ON {', '.join(t.name for t in batch)} TO {READER};")
        await conn.execute("ANALYZE")  # outside a transaction block: one table at a time
    finally:
        await conn.close()
    return derive_dsn(admin_dsn, database=name, user=READER)


# --- the scripted LLM, in a process of its own -----------------------------------------------------------

def _serve_llm(conn: multiprocessing.connection.Connection) -> None:
    from gateway.testing.scripted_llm import ScriptedLLM

    llm = ScriptedLLM().start()
    llm.add(lambda request: "<sql>SELECT 1 AS one</sql>")
    conn.send(llm.base_url)
    conn.recv()
    llm.stop()


def _env(dsn: str, llm_url: str, tmp: Path, budget: int) -> dict[str, str]:
    (tmp / "rules").mkdir(exist_ok=True)
    (tmp / "guidelines").mkdir(exist_ok=True)
    (tmp / "guidelines" / "default.md").write_text("1. Check every literal against the stored values.\n")
    return {**os.environ, "NL2SQL_DATABASES__SCALE__DSN": dsn, "NL2SQL_LOGGING__LEVEL": "WARNING",
            "NL2SQL_AUTH__ENABLED": "false", "NL2SQL_LLM__BASE_URL": llm_url, "NL2SQL_LLM__MODEL": "scripted",
            "NL2SQL_CONTEXT__TOKEN_BUDGET": str(budget), "NL2SQL_RULES_DIR": str(tmp / "rules"),
            "NL2SQL_GUIDELINES_DIR": str(tmp / "guidelines"), "NL2SQL_SERVER__REQUEST_TIMEOUT_S": "300",
            "NL2SQL_DATABASES__SCALE__ASK__TIME_BUDGET_S": "300",
            "NL2SQL_CONTEXT__REFRESH_TIMEOUT_S": "300"}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("VmRSS not found")


@dataclass
class ServerRun:
    ready_s: float
    first_s: float
    rss_mb: float


def run_server(dsn: str, llm_url: str, tmp: Path, budget: int, questions: list[Question]) -> ServerRun:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--factory", "gateway.api.app:app_factory", "--host", "127.0.0.1",
         "--port", str(port), "--loop", "uvloop", "--http", "httptools", "--no-access-log", "--log-level", "warning"],
        env=_env(dsn, llm_url, tmp, budget), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with httpx.Client(base_url=base, timeout=600) as http:
            while True:
                try:
                    if http.post("/v1/sql", json={"database": "scale", "sql": "SELECT 1"}).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.perf_counter() - started > 600 or proc.poll() is not None:
                    raise SystemExit("gateway did not become ready")
                time.sleep(0.05)
            ready = time.perf_counter() - started
            t0 = time.perf_counter()
            first = http.post("/v1/ask", json={"database": "scale", "question": questions[0].text})
            first_s = time.perf_counter() - t0
            if first.status_code != 200:
                raise SystemExit(f"first question failed: {first.status_code} {first.text[:300]}")
            for q in questions[1:]:
                http.post("/v1/ask", json={"database": "scale", "question": q.text})
            memory = rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return ServerRun(ready, first_s, memory)


@dataclass
class ContextRun:
    cold: list[float]
    warm: list[float]
    tokens: list[int]
    schema_tokens: list[int]
    recall: float
    precision: float
    by_kind: dict[str, float]
    change_s: float


async def run_context(dsn: str, llm_url: str, tmp: Path, budget: int, questions: list[Question]) -> ContextRun:
    from gateway.api.app import create_app
    from gateway.context import build_context
    from gateway.context.model import estimate_tokens
    from gateway.observability.logging import configure_logging
    from gateway.settings import load_settings

    env = _env(dsn, llm_url, tmp, budget)
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        settings = load_settings()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    configure_logging("WARNING", False)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        state = app.state.gateway
        target = state.target("scale")
        rules = state.ruleset("scale")
        await build_context(state, settings.context, target, rules, "warm up", None)
        while state.schemas.progress("scale").get("values") == "loading":  # the complete snapshot, with values
            await asyncio.sleep(0.1)
        cold: list[float] = []
        warm: list[float] = []
        tokens: list[int] = []
        schema_tokens: list[int] = []
        hits: dict[str, list[bool]] = {}
        precision: list[float] = []
        for samples in (cold, warm):
            for q in questions:
                t0 = time.perf_counter()
                ctx = await build_context(state, settings.context, target, rules, q.text, None)
                samples.append((time.perf_counter() - t0) * 1000)
                if samples is cold:
                    kept = set(ctx.tables)
                    tokens.append(ctx.token_estimate)
                    schema_tokens.append(estimate_tokens(ctx.schema_text))
                    hits.setdefault(q.kind, []).append(q.expected <= kept)
                    precision.append(len(q.expected & kept) / max(len(kept), 1))
        # A table added to the running database: how long until a question's context holds it.
        admin = await asyncpg.connect(os.environ.get("SCALE_ADMIN_DSN") or dsn)
        try:
            await admin.execute("CREATE TABLE quokka_sighting_77 (id bigint PRIMARY KEY, seen_at date); "
                                f"GRANT SELECT ON quokka_sighting_77 TO {READER}")
        finally:
            await admin.close()
        t0 = time.perf_counter()
        while True:
            ctx = await build_context(state, settings.context, target, rules, "How many quokka sightings 77?", None)
            if "quokka_sighting_77" in ctx.tables:
                break
            if time.perf_counter() - t0 > 600:
                raise SystemExit("the added table did not reach the context within 600 s")
            await asyncio.sleep(0.2)
        change_s = time.perf_counter() - t0
    everything = [h for found in hits.values() for h in found]
    return ContextRun(cold, warm, tokens, schema_tokens, sum(everything) / len(everything),
                      statistics.mean(precision), {k: sum(v) / len(v) for k, v in hits.items()}, change_s)


def _p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,1000,10000", help="comma-separated table counts")
    parser.add_argument("--questions", type=int, default=200, help="generated questions per size")
    parser.add_argument("--budget", type=int, default=4000, help="context.token_budget")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows: list[tuple[int, float, ServerRun, ContextRun]] = []
    with tempfile.TemporaryDirectory(prefix="nl2sqlscale-") as tmp_name, in_own_process(_serve_llm) as llm_url:
        tmp = Path(tmp_name)
        server = EmbeddedPostgres(tmp / "pg", durable=False)
        server.start()
        try:
            for n in sizes:
                tables = make_tables(n)
                questions = make_questions(tables, args.questions)
                t0 = time.perf_counter()
                dsn = asyncio.run(build_database(server.admin_dsn, f"scale_{n}", tables))
                built = time.perf_counter() - t0
                print(f"# {n} tables built in {built:.1f} s", file=sys.stderr, flush=True)
                served = run_server(dsn, llm_url, tmp, args.budget, questions)
                print(f"# {n}: ready {served.ready_s:.2f} s, first question {served.first_s:.2f} s",
                      file=sys.stderr, flush=True)
                os.environ["SCALE_ADMIN_DSN"] = derive_dsn(server.admin_dsn, database=f"scale_{n}")
                context = asyncio.run(run_context(dsn, llm_url, tmp, args.budget, questions))
                rows.append((n, built, served, context))
        finally:
            server.destroy()
    print(f"{args.questions} questions per size (exact names, spaced words, comment synonyms, values, joins); "
          f"context.token_budget {args.budget}; tokens estimated at 4 characters each\n")
    print("| tables | ready s | first q s | RSS MiB | context ms cold p50/p99 | warm p50/p99 | prompt tokens "
          "p50/max | schema tokens max | recall | precision | recall by kind | change s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    base_rss = rows[0][2].rss_mb if rows else 0.0
    for n, _, s, c in rows:
        kinds = ", ".join(f"{k} {v:.0%}" for k, v in c.by_kind.items())
        growth = f" (+{s.rss_mb - base_rss:.0f})" if n != rows[0][0] else ""
        print(f"| {n:,} | {s.ready_s:.2f} | {s.first_s:.2f} | {s.rss_mb:.0f}{growth} | "
              f"{statistics.median(c.cold):.1f} / {_p(c.cold, 0.99):.1f} | "
              f"{statistics.median(c.warm):.1f} / {_p(c.warm, 0.99):.1f} | "
              f"{statistics.median(c.tokens):.0f} / {max(c.tokens)} | {max(c.schema_tokens)} | {c.recall:.0%} | "
              f"{c.precision:.0%} | {kinds} | {c.change_s:.1f} |")


if __name__ == "__main__":
    main()
