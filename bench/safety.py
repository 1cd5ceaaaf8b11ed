"""Cost of the static safety check alone, against its two parser floors, in one interleaved run.

    python bench/safety.py [--rounds 400] [--hidden]

For each typical BI query, round after round, times (in this order) pglast's parse (``parse_sql_json``),
sqlglot's ``parse_one(..., dialect="postgres")`` and ``gateway.safety.check``. Prints medians and p99 in
ms per query and overall, and check / (pglast + sqlglot): what the rules add on top of parsing twice.
No caching is involved: check() caches nothing. ``--hidden`` checks under a policy that hides columns (the
demo's customers.email, employees.salary, employees.email), which adds the column-lineage pass.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import sqlglot
import sqlglot.tokens
from pglast import parser as pg

from gateway.safety import Policy, check

_HIDDEN = ("customers.email", "employees.salary", "employees.email")

QUERIES: dict[str, str] = {
    "aggregate": "SELECT region, count(*), sum(amount) FROM orders GROUP BY region ORDER BY 2 DESC LIMIT 10",
    "join": "SELECT c.name, sum(o.amount) AS total FROM orders o JOIN customers c ON c.id = o.customer_id "
    "WHERE o.created_at >= now() - interval '90 days' GROUP BY c.name ORDER BY total DESC LIMIT 20",
    "cte+window": "WITH monthly AS (SELECT date_trunc('month', created_at) AS m, sum(amount) AS revenue "
    "FROM orders GROUP BY 1) SELECT m, revenue, revenue - lag(revenue) OVER (ORDER BY m) AS delta, "
    "rank() OVER (ORDER BY revenue DESC) FROM monthly ORDER BY m",
    "filter+percentile": "SELECT region, count(*) FILTER (WHERE status = 'paid') AS paid, "
    "percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) AS median FROM orders GROUP BY ROLLUP (region)",
    "lateral": "SELECT c.id, c.name, last.amount FROM customers c CROSS JOIN LATERAL (SELECT amount FROM "
    "orders o WHERE o.customer_id = c.id ORDER BY created_at DESC LIMIT 1) last",
    "json": "SELECT payload->>'type' AS kind, count(*) FROM events WHERE payload @> '{\"source\": \"web\"}' "
    "AND created_at > now() - interval '7 days' GROUP BY 1 ORDER BY 2 DESC",
    "recursive": "WITH RECURSIVE chain AS (SELECT id, manager_id, name, 1 AS depth FROM employees WHERE "
    "manager_id IS NULL UNION ALL SELECT e.id, e.manager_id, e.name, c.depth + 1 FROM employees e JOIN "
    "chain c ON e.manager_id = c.id) SELECT depth, count(*) FROM chain GROUP BY depth ORDER BY depth",
    "4-way join": "SELECT r.name AS region, p.category, sum(oi.quantity * oi.unit_price) AS revenue FROM "
    "order_items oi JOIN orders o ON o.id = oi.order_id JOIN products p ON p.id = oi.product_id JOIN "
    "customers c ON c.id = o.customer_id JOIN regions r ON r.id = c.region_id WHERE o.status <> "
    "'cancelled' GROUP BY r.name, p.category HAVING sum(oi.quantity) > 10 ORDER BY revenue DESC",
}


def _ms(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1e3, ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=400)
    ap.add_argument("--hidden", action="store_true", help="check under a policy that hides columns")
    args = ap.parse_args()
    policy = Policy(hidden_columns=frozenset(_HIDDEN)) if args.hidden else Policy()

    for sql in QUERIES.values():  # all must be allowed, and warm
        verdict = check(sql, policy)
        assert verdict.allowed, (sql, verdict.findings)
    sides = {"pglast": pg.parse_sql_json, "sqlglot": lambda s: sqlglot.parse_one(s, dialect="postgres"),
             "check": lambda s: check(s, policy)}
    times = {name: {q: [] for q in QUERIES} for name in sides}  # type: dict[str, dict[str, list[float]]]
    clock = time.perf_counter
    gc.disable()
    try:
        for _ in range(args.rounds):
            for q, sql in QUERIES.items():
                for name, fn in sides.items():
                    t0 = clock()
                    fn(sql)
                    times[name][q].append(clock() - t0)
            gc.collect()
    finally:
        gc.enable()

    print(f"sqlglotc installed: {sqlglot.tokens.SQLGLOTC_INSTALLED}; rounds: {args.rounds}; "
          f"hidden columns: {'yes' if args.hidden else 'no'}; times in ms")
    header = f"{'query':<18} {'pglast med':>10} {'sqlglot med':>11} {'check med':>9} {'check p99':>9} " \
             f"{'check/(pg+sg)':>13}"
    print(header)
    print("-" * len(header))
    rows = [*QUERIES, "ALL"]
    for q in rows:
        pick = (lambda n: [t for ts in times[n].values() for t in ts]) if q == "ALL" else (lambda n: times[n][q])
        pg_med, _ = _ms(pick("pglast"))
        sg_med, _ = _ms(pick("sqlglot"))
        ck_med, ck_p99 = _ms(pick("check"))
        print(f"{q:<18} {pg_med:>10.3f} {sg_med:>11.3f} {ck_med:>9.3f} {ck_p99:>9.3f} "
              f"{ck_med / (pg_med + sg_med):>13.2f}")


if __name__ == "__main__":
    main()
