// Status (SRE): readiness per database and the gateway's own metrics (GET /readyz, GET /metrics, both
// public), refreshed every few seconds while the page is open.

import { get } from "./api.js";
import { clear, h } from "./dom.js";
import { parseMetrics, sumBy } from "./prom.js";

const EVERY_MS = 3000;
let timer = null;

export function leave() { clearInterval(timer); timer = null; }

export async function show(root) {
  const body = h("div", { id: "status-body" });
  const stamp = h("p", { class: "stamp", id: "status-stamp" });
  root.append(h("section", { class: "panel", "aria-labelledby": "status-title" }, h("h1", { id: "status-title" }, "Status"),
    h("p", {}, `Readiness and the gateway's own metrics, refreshed every ${EVERY_MS / 1000} seconds.`), stamp, body));
  const refresh = async () => {
    try {
      const [ready, text] = await Promise.all([get("../readyz", { allow: [503] }), get("../metrics")]);
      render(body, ready, parseMetrics(text));
      stamp.textContent = `Updated ${new Date().toLocaleTimeString()}.`;
    } catch (e) {
      stamp.textContent = `Could not refresh: ${e.message}`;
    }
  };
  await refresh();
  leave();
  timer = setInterval(refresh, EVERY_MS);
}

const table = (title, head, rows, idName) => h("section", { class: "stat", "aria-labelledby": `${idName}-t` },
  h("h2", { id: `${idName}-t` }, title),
  rows.length ? h("table", { class: "grid", id: idName }, h("thead", {}, h("tr", {}, head.map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, r.map((c) => h("td", {}, c)))))) : h("p", {}, "None yet."));

const pct = (v) => (v === undefined || Number.isNaN(v) ? "–" : `${(100 * v).toFixed(1)} %`);
const mean = (samples, name, by) => {
  const sums = sumBy(samples, `${name}_sum`, by), counts = sumBy(samples, `${name}_count`, by);
  return [...counts].filter(([, n]) => n > 0).map(([k, n]) => [k || "all", String(n), `${((1000 * sums.get(k)) / n).toFixed(1)} ms`]);
};

function render(body, ready, m) {
  const asked = sumBy(m, "nl2sql_ask_total", "database");
  const first = sumBy(m, "nl2sql_first_pass_ratio", "database"), final = sumBy(m, "nl2sql_final_pass_ratio", "database");
  const dbs = Object.keys(ready.databases || {});
  const total = [...asked.values()].reduce((a, b) => a + b, 0);
  clear(body).append(
    h("p", { class: `ready ${ready.status}` }, h("strong", {}, ready.status === "ok" ? "Ready" : "Not ready"),
      ready.detail ? ` — ${ready.detail}` : ""),
    h("p", { class: "big" }, "Questions answered: ", h("output", { id: "asked-total" }, String(total))),
    table("Databases", ["Database", "Readiness", "Questions", "First pass", "Final pass", "Privileges"],
      dbs.map((d) => [d, ready.databases[d], String(asked.get(d) || 0), pct(first.get(d)), pct(final.get(d)),
        ((ready.privileges || {})[d] || []).join("; ") || "ok"]), "st-dbs"),
    table("Answers by status", ["Status", "Count"], [...sumBy(m, "nl2sql_ask_total", "status")].map(([k, v]) => [k, String(v)]), "st-status"),
    table("Reflections by trigger", ["Trigger", "Count"], [...sumBy(m, "nl2sql_reflections_total", "trigger")].map(([k, v]) => [k, String(v)]), "st-reflect"),
    table("Safety blocks by code", ["Code", "Count"], [...sumBy(m, "nl2sql_safety_blocks_total", "code")].map(([k, v]) => [k, String(v)]), "st-blocks"),
    table("LLM latency (mean)", ["Purpose", "Calls", "Mean"], mean(m, "nl2sql_llm_seconds", "purpose"), "st-llm"),
    table("Database latency (mean)", ["Database", "Queries", "Mean"], mean(m, "nl2sql_db_seconds", "database"), "st-db"),
    table("Shed requests", ["Reason", "Count"], [...sumBy(m, "nl2sql_rejected_total", "reason")].map(([k, v]) => [k, String(v)]), "st-shed"));
}
