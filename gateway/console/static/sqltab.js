// SQL (analyst): a box for the client's own SQL on POST /v1/sql, datasette-style. "Check" asks
// POST /v1/check and shows the findings inline without running; "Run" runs it (a refusal shows the same
// findings). Answers on the Ask page open here with their SQL ("Edit and re-run").

import { ApiError, get, post } from "./api.js";
import { clear, h, liveRegion, ms } from "./dom.js";
import { resultTable } from "./table.js";
import { chartView } from "./chart.js";
import { restrictedNote } from "./restricted.js";

let pending = null;  // { database, sql } handed over by "Edit and re-run"

// Open the SQL page with this statement in the box (from an answer, a history entry ...).
export function editAndRerun(database, sql) {
  pending = { database, sql };
  if (location.hash === "#sql") window.dispatchEvent(new HashChangeEvent("hashchange"));
  else location.hash = "sql";
}

export function findingsList(findings, label = "Findings") {
  return h("ul", { class: "findings", id: "sql-findings", "aria-label": label },
    findings.map((f) => h("li", {}, h("code", {}, f.code), ` ${f.message}`,
      f.position !== null && f.position !== undefined ? h("small", { class: "pos" }, ` (at character ${f.position + 1})`) : "")));
}

export async function show(root, ctx) {
  const live = liveRegion();
  const say = (text) => { live.textContent = text; };
  const dbSelect = h("select", { id: "sql-db", name: "database" });
  const box = h("textarea", { id: "sql-text", name: "sql", rows: 8, spellcheck: "false", required: true,
    "aria-describedby": "sql-hint" });
  const check = h("button", { type: "button", id: "sql-check" }, "Check");
  const run = h("button", { type: "submit", id: "sql-run" }, "Run");
  const verdict = h("div", { id: "sql-verdict" });
  const output = h("div", { id: "sql-output" });
  const form = h("form", { id: "sql-form", "aria-label": "Run SQL" },
    h("div", { class: "field" }, h("label", { for: "sql-db" }, "Database"), dbSelect),
    h("div", { class: "field" }, h("label", { for: "sql-text" }, "SQL"), box,
      h("small", { id: "sql-hint" }, "One read-only statement. Ctrl+Enter runs it. It is checked first, then run in a read-only transaction with the database's limits.")),
    h("div", { class: "toolbar" }, run, check));
  root.append(h("section", { class: "panel", "aria-labelledby": "sql-title" }, h("h1", { id: "sql-title" }, "SQL"),
    form, live, verdict, output));

  let databases;
  try { databases = (await get("../v1/databases")).databases; } catch (error) {
    if (error instanceof ApiError && error.status === 401) return ctx.signedOut();
    output.append(h("p", { class: "error", role: "alert" }, error.message));
    return;
  }
  dbSelect.append(...databases.map((d) => h("option", { value: d.name }, d.name)));
  if (pending) {
    if (databases.some((d) => d.name === pending.database)) dbSelect.value = pending.database;
    box.value = pending.sql;
    pending = null;
  }

  const showVerdict = (v) => {
    clear(verdict);
    if (!v) return;
    verdict.append(h("p", { id: "sql-allowed", class: v.allowed ? "ok" : "error" },
      v.allowed ? `The check allows this ${v.statement_kind || "statement"}.` : "The check blocks this statement."));
    if (v.findings && v.findings.length) verdict.append(findingsList(v.findings));
    const note = restrictedNote(v.findings, { database: dbSelect.value, role: ctx.me.role });
    if (note) verdict.append(note);
  };

  check.addEventListener("click", async () => {
    if (!box.value.trim()) return;
    try {
      const r = await post("../v1/check", { database: dbSelect.value, sql: box.value });
      showVerdict(r.verdict);
      say(r.verdict.allowed ? "Allowed." : `Blocked: ${r.verdict.codes.join(", ")}.`);
    } catch (error) { showVerdict(null); say(error.message); }
  });
  box.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); form.requestSubmit(); } });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!box.value.trim()) return;
    run.disabled = true;
    clear(output);
    say("Running…");
    try {
      const r = await post("../v1/sql", { database: dbSelect.value, sql: box.value });
      showVerdict(r.verdict);
      const t = r.timings || {};
      output.append(h("p", { id: "sql-summary" }, `${r.row_count} rows${r.truncated ? " (truncated: the database's max_rows)" : ""}`,
        ` · check ${ms(t.check_ms)} · database ${ms(t.db_ms)} · total ${ms(t.total_ms)}`));
      if (r.columns.length) output.append(chartView(r.columns, r.rows), resultTable(r.columns, r.rows, { caption: "Result", say }));
      say(`${r.row_count} rows.`);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return ctx.signedOut();
      const findings = error.problem && error.problem.findings;
      showVerdict(findings ? { allowed: false, findings } : null);
      output.append(h("p", { class: "error", role: "alert", id: "sql-error" }, error.message));
      say(error.message);
    } finally { run.disabled = false; }
  });
  box.focus();
}
