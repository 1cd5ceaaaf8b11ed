// Metrics (client): the database's semantic model as GET /v1/databases/{name}/semantic returns it: each
// metric's definition, synonyms and the dimensions it groups by; where it is used (the ratio and derived
// metrics built on it, the verified questions that name it); the dimensions with their grains.

import { get } from "./api.js";
import { append, clear, h } from "./dom.js";
import { databasePicker } from "./pick.js";
import { highlight } from "./sql.js";
import { fail } from "./schema.js";

export async function show(root, ctx) {
  const body = h("div", { id: "metrics-body" });
  root.append(h("section", { class: "panel", "aria-labelledby": "metrics-title" },
    h("h1", { id: "metrics-title" }, "Metrics"),
    h("p", {}, "Metric questions are answered from these definitions: the gateway writes the SQL, and a generated query that names a metric must compute it this way."),
    body));
  let picker;
  try { picker = await databasePicker("metrics-db", load); } catch (e) { return fail(body, e, ctx); }
  body.before(picker.field);
  if (!picker.empty) load(picker.select.value);

  async function load(db) {
    clear(body).append(h("p", { role: "status" }, "Loading…"));
    let m;
    try { m = await get(`../v1/databases/${encodeURIComponent(db)}/semantic`); } catch (e) { return fail(body, e, ctx); }
    if (!m.configured) {
      return clear(body).append(h("p", { id: "metrics-none" }, "This database has no semantic model (semantic_dir/" + db + ".yaml)."));
    }
    const usedBy = (name) => [
      ...m.metrics.filter((x) => x.depends_on.includes(name)).map((x) => `metric ${x.name}`),
      ...m.verified_queries.filter((q) => q.question.toLowerCase().includes(name.replace(/_/g, " "))).map((q) => `verified question “${q.question}”`),
    ];
    const rows = m.metrics.map((x) => h("tr", { "data-metric": x.name },
      h("th", { scope: "row" }, h("code", {}, x.name), x.label ? h("div", {}, x.label) : ""),
      h("td", {}, x.type),
      h("td", {}, h("pre", { class: "sql" }, highlight(x.definition)), x.description ? h("p", {}, x.description) : ""),
      h("td", {}, x.synonyms.join(", ")),
      h("td", {}, x.dimensions.join(", ")),
      h("td", {}, usedBy(x.name).join("; ") || "—")));
    const dims = m.dimensions.map((d) => h("tr", { "data-dimension": d.name },
      h("th", { scope: "row" }, h("code", {}, d.name)), h("td", {}, h("code", {}, `${d.table}.${d.column}`)),
      h("td", {}, d.type + (d.grains.length ? ` (${d.grains.join(", ")})` : "")), h("td", {}, d.synonyms.join(", ")),
      h("td", {}, d.description)));
    append(clear(body), [
      h("p", { id: "metrics-status", class: m.status === "ok" ? "ok" : "error" },
        m.status === "ok" ? `${m.metrics.length} metric(s), ${m.dimensions.length} dimension(s)` :
          "The model's files do not load: the last good model is served (nl2sql-gateway semantic check)."),
      h("table", { id: "metrics-table" }, h("caption", {}, "Metrics"),
        h("thead", {}, h("tr", {}, ["Metric", "Type", "Definition", "Synonyms", "Dimensions", "Used by"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, rows)),
      h("table", { id: "dimensions-table" }, h("caption", {}, "Dimensions"),
        h("thead", {}, h("tr", {}, ["Dimension", "Column", "Type", "Synonyms", "Description"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, dims)),
    ]);
  }
}
