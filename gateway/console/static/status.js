// Status (SRE): readiness per database and the gateway's own metrics (GET /readyz, GET /metrics, both
// public), refreshed every few seconds while the page is open: request latency p50/p95/p99 per interval as
// sparklines (kept by this page while it is open), uptime, pool use, errors by code. A login role that can
// do more than read (a superuser, one that can write) is a warning, never a green "Ready".

import { get } from "./api.js";
import { clear, h } from "./dom.js";
import { parseMetrics, sumBy } from "./prom.js";

const EVERY_MS = 3000;
const KEEP = 40;  // points per sparkline
let timer = null;
let previous = null;  // the last poll's cumulative latency buckets
const series = { p50: [], p95: [], p99: [] };

export function leave() { clearInterval(timer); timer = null; }

export async function show(root) {
  const body = h("div", { id: "status-body" });
  const stamp = h("p", { class: "stamp", id: "status-stamp" });
  root.append(h("section", { class: "panel", "aria-labelledby": "status-title" }, h("h1", { id: "status-title" }, "Status"),
    h("p", {}, `Readiness and the gateway's own metrics, refreshed every ${EVERY_MS / 1000} seconds.`), stamp, body));
  const refresh = async () => {
    try {
      const [ready, text, about] = await Promise.all([get("../readyz", { allow: [503] }), get("../metrics"),
        get("../v1/about").catch(() => null)]);
      const m = parseMetrics(text);
      track(m);
      render(body, ready, m, about);
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

// Request latency buckets (le -> cumulative count) over every API route, the console's files and the
// probes left out.
function buckets(m) {
  const out = new Map();
  for (const s of m) {
    if (s.name !== "nl2sql_request_seconds_bucket") continue;
    const e = s.labels.endpoint || "";
    if (!e.startsWith("/v1") && !e.startsWith("/mcp")) continue;
    const le = s.labels.le === "+Inf" ? Infinity : Number(s.labels.le);
    out.set(le, (out.get(le) || 0) + s.value);
  }
  return out;
}

// The q-quantile from cumulative buckets (the bucket's upper bound: what Prometheus' histogram_quantile
// would interpolate within it, this rounds up).
export function quantile(cumulative, q) {
  const les = [...cumulative.keys()].sort((a, b) => a - b);
  const total = cumulative.get(Infinity) || (les.length ? cumulative.get(les[les.length - 1]) : 0);
  if (!total) return null;
  for (const le of les) if (cumulative.get(le) >= q * total) return le === Infinity ? les[les.length - 2] ?? null : le;
  return null;
}

function track(m) {
  const now = buckets(m);
  if (previous) {
    const delta = new Map([...now].map(([le, n]) => [le, n - (previous.get(le) || 0)]));
    for (const [name, q] of [["p50", 0.5], ["p95", 0.95], ["p99", 0.99]]) {
      series[name].push(quantile(delta, q));
      if (series[name].length > KEEP) series[name].shift();
    }
  }
  previous = now;
}

const SVG = "http://www.w3.org/2000/svg";
function sparkline(points, label) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 120 28");
  svg.setAttribute("class", "spark");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", label);
  const known = points.map((v, i) => [i, v]).filter(([, v]) => v !== null);
  const max = Math.max(0.001, ...known.map(([, v]) => v));
  const line = document.createElementNS(SVG, "polyline");
  const span = Math.max(1, points.length - 1, KEEP - 1);
  line.setAttribute("points", known.map(([i, v]) => `${(120 * i) / span},${26 - (24 * v) / max}`).join(" "));
  svg.append(line);
  return svg;
}

const secs = (v) => (v === null || v === undefined ? "–" : v >= 1 ? `≤ ${v} s` : `≤ ${Math.round(v * 1000)} ms`);

function uptime(m) {
  const start = m.find((s) => s.name === "process_start_time_seconds");
  return start ? since(Date.now() / 1000 - start.value) : "–";
}

function since(seconds) {
  let left = Math.max(0, Math.round(seconds));
  const d = Math.floor(left / 86400); left %= 86400;
  const hh = Math.floor(left / 3600); left %= 3600;
  return `${d ? `${d} d ` : ""}${hh} h ${Math.floor(left / 60)} min`;
}

// The gateway's own history (GET /v1/about: per 10 s, ten minutes, kept across page loads) when it has one;
// else what this page computed from /metrics since it opened.
function latencyTable(about) {
  const server = about && about.latency && about.latency.length > 1;
  const rows = server
    ? ["p50", "p95", "p99"].map((q) => [q, about.latency.map((p) => (p[`${q}_ms`] === null ? null : p[`${q}_ms`] / 1000))])
    : Object.entries(series);
  return h("section", { class: "stat", "aria-labelledby": "st-lat-t" },
    h("h2", { id: "st-lat-t" }, server ? "API latency per 10 s (last 10 min)" : `API latency per ${EVERY_MS / 1000} s`),
    h("table", { class: "grid", id: "st-latency" }, h("thead", {}, h("tr", {}, ["Quantile", "Last", "Over time"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows.map(([name, points]) => h("tr", {}, h("td", {}, name),
        h("td", {}, server ? ms(points[points.length - 1]) : secs(points.length ? points[points.length - 1] : null)),
        h("td", {}, sparkline(points, `${name} latency over the last ${points.length} intervals`)))))));
}

const ms = (v) => (v === null || v === undefined ? "–" : v >= 1 ? `${v.toFixed(2)} s` : `${Math.round(v * 1000)} ms`);

function render(body, ready, m, about) {
  const asked = sumBy(m, "nl2sql_ask_total", "database");
  const first = sumBy(m, "nl2sql_first_pass_ratio", "database"), final = sumBy(m, "nl2sql_final_pass_ratio", "database");
  const dbs = Object.keys(ready.databases || {});
  const total = [...asked.values()].reduce((a, b) => a + b, 0);
  const roleProblems = Object.entries(ready.privileges || {}).filter(([, p]) => p && p.length);
  const state = ready.status !== "ok" ? "unavailable" : roleProblems.length ? "warn" : "ok";
  const inUse = sumBy(m, "nl2sql_pool_in_use", "database"), poolMax = sumBy(m, "nl2sql_pool_max", "database");
  const errorsByCode = sumBy(m, "nl2sql_problems_total", "code");
  const httpErrors = [...sumBy(m, "nl2sql_requests_total", "status")].filter(([k]) => Number(k) >= 400);
  clear(body).append(
    h("p", { class: `ready ${state}`, id: "status-ready" },
      h("strong", {}, state === "unavailable" ? "Not ready" : state === "warn" ? "Ready, with warnings" : "Ready"),
      ready.detail ? ` — ${ready.detail}` : "",
      roleProblems.length ? ` — the database login role may do more than read: ${roleProblems.map(([d, p]) => `${d}: ${p.join(", ")}`).join("; ")}. ` +
        "Serve with a role that can only read (nl2sql-gateway rules grants shows the grants)." : ""),
    h("dl", { class: "kv", id: "st-process" },
      h("dt", {}, "Version"), h("dd", { id: "st-version" }, about ? about.version : "–"),
      h("dt", {}, "Uptime"), h("dd", { id: "st-uptime" }, about ? since(about.uptime_s) : uptime(m)),
      h("dt", {}, "LLM"), h("dd", { id: "st-llm-model" }, !about ? "–" : about.llm
        ? `${about.llm.model || "no model set"}${about.llm.endpoint ? ` at ${about.llm.endpoint}` : ""}`
        : "none configured: only verified questions are answered"),
      h("dt", {}, "Feedback store"), h("dd", {}, !about ? "–" : about.store ? "configured" : "not configured"),
      h("dt", {}, "Requests in flight"), h("dd", {}, String([...sumBy(m, "nl2sql_in_flight", null).values()][0] ?? 0))),
    latencyTable(about),
    table("Connection pools", ["Database", "In use", "Max"], [...poolMax].map(([d, n]) => [d, String(inUse.get(d) || 0), String(n)]), "st-pools"),
    table("Errors by problem code", ["Code", "Count"], [...errorsByCode].map(([k, v]) => [k, String(v)]), "st-errors"),
    table("Error responses by HTTP status", ["Status", "Count"], httpErrors.map(([k, v]) => [k, String(v)]), "st-http-errors"),
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
