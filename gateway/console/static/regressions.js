// Regressions (dba), one guideline version: each replay of the verified set run before its activation
// (GET /v1/guidelines/{version}/regressions): what was right with the guideline in force and is wrong with
// this version, the reason and the SQL before and after; suspect references, shown and not counted; cost.
// Reached from the Guideline page (#regressions/<version>).

import { get } from "./api.js";
import { h, ms } from "./dom.js";
import { fail } from "./schema.js";

const VERDICTS = ["regressed", "fixed", "kept", "still_wrong", "suspect"];

export async function show(root, ctx) {
  const version = Number.parseInt(ctx.param || "", 10);
  const body = h("div", { id: "rg-body" });
  root.append(h("section", { class: "panel", "aria-labelledby": "rg-title" },
    h("h1", { id: "rg-title" }, Number.isInteger(version) ? `Regressions of guideline version ${version}` : "Regressions"),
    h("p", {}, h("a", { href: "#guideline" }, "Back to the guideline versions")), body));
  if (!Number.isInteger(version)) {
    body.append(h("p", {}, "Open a version on the Guideline page and follow its Regressions link."));
    return;
  }
  let found;
  try { found = await get(`../v1/guidelines/${version}/regressions`); } catch (e) { return fail(body, e, ctx); }
  if (!found.reports.length) {
    body.append(h("p", { id: "rg-none" }, `Version ${version} has not been replayed yet: a replay runs when it is activated.`));
    return;
  }
  const [latest, ...older] = found.reports;
  body.append(...reportView(latest));
  if (older.length) {
    body.append(h("h2", {}, "Earlier replays"), h("table", { class: "grid", id: "rg-older" },
      h("thead", {}, h("tr", {}, ["Report", "When", "Asked by", "Regressed", "Replayed"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, older.map((r) => h("tr", {}, h("td", {}, String(r.id)), h("td", {}, when(r.created_at)),
        h("td", {}, r.actor), h("td", { class: "num" }, String(r.regressed)), h("td", { class: "num" }, String(r.counts.replayed ?? "")))))));
  }
}

function when(iso) { return iso.replace("T", " ").slice(0, 19); }

function reportView(stored) {
  const report = stored.report || {};
  const counts = stored.counts || {};
  const cost = report.cost || {};
  const verdict = stored.passed ? h("span", { class: "badge passed", id: "rg-verdict" }, "no regression")
    : h("span", { class: "badge failed", id: "rg-verdict" }, `${stored.regressed} regressed`);
  const out = [
    h("p", {}, `Report ${stored.id}, ${when(stored.created_at)}, asked by ${stored.actor}: `, verdict,
      ` · ${report.before || "in force"} → ${report.after || stored.subject}`),
    h("table", { class: "grid", id: "rg-counts" }, h("caption", {}, `${counts.replayed ?? 0} verified question(s) replayed`),
      h("thead", {}, h("tr", {}, VERDICTS.map((v) => h("th", { scope: "col" }, v.replace("_", " "))))),
      h("tbody", {}, h("tr", {}, VERDICTS.map((v) => h("td", { class: "num" }, String(counts[v] ?? 0)))))),
    h("table", { class: "grid", id: "rg-cost" }, h("caption", {}, "Cost"),
      h("thead", {}, h("tr", {}, ["", "LLM calls", "Tokens", "p50 latency", "p95 latency"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, ["before", "after"].filter((s) => cost[s]).map((s) => h("tr", {}, h("th", { scope: "row" }, s),
        h("td", { class: "num" }, String(cost[s].llm_calls)),
        h("td", { class: "num" }, String(cost[s].prompt_tokens + cost[s].completion_tokens)),
        h("td", { class: "num" }, ms(cost[s].latency_ms_p50)), h("td", { class: "num" }, ms(cost[s].latency_ms_p95)))))),
  ];
  const regressions = report.regressions || [];
  out.push(h("h2", {}, "Right before, wrong now"));
  out.push(regressions.length ? h("table", { class: "grid", id: "rg-regressions" },
    h("thead", {}, h("tr", {}, ["Question", "Reason", "SQL before", "SQL now"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, regressions.map((r) => h("tr", {}, h("td", {}, r.question),
      h("td", {}, h("span", { class: "badge failed" }, r.reason || "?")),
      h("td", {}, h("code", {}, r.before_sql || "–")), h("td", {}, h("code", {}, r.after_sql || "–"))))))
    : h("p", {}, "None."));
  const suspects = (report.items || []).filter((i) => i.verdict === "suspect");
  if (suspects.length) {
    out.push(h("h2", {}, "Suspect references (not counted)"), h("table", { class: "grid", id: "rg-suspects" },
      h("thead", {}, h("tr", {}, ["Question", "Why", "Reference SQL"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, suspects.map((i) => h("tr", {}, h("td", {}, i.question), h("td", {}, i.suspect),
        h("td", {}, h("code", {}, i.sql)))))));
  }
  return out;
}
