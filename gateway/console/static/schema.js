// Schema: tables, columns, types, keys and comments; for dba keys, what the rules hide, with the file.

import { get, ApiError } from "./api.js";
import { clear, h } from "./dom.js";
import { databasePicker } from "./pick.js";

export async function show(root, ctx) {
  const body = h("div", { id: "schema-body" });
  root.append(h("section", { class: "panel", "aria-labelledby": "schema-title" }, h("h1", { id: "schema-title" }, "Schema"), body));
  let picker;
  try { picker = await databasePicker("schema-db", load); } catch (e) { return fail(body, e, ctx); }
  body.before(picker.field);
  if (!picker.empty) load(picker.select.value);

  async function load(db) {
    clear(body).append(h("p", { role: "status" }, "Loading…"));
    let schema, rules = null;
    try {
      [schema, rules] = await Promise.all([get(`../v1/databases/${encodeURIComponent(db)}/schema`),
        get(`../v1/databases/${encodeURIComponent(db)}/rules`).catch(() => null)]);
    } catch (e) { return fail(body, e, ctx); }
    clear(body);
    body.append(h("p", {}, `${schema.tables.length} tables and views the gateway may read.`));
    if (rules && (rules.hidden_tables.length || rules.hidden_columns.length)) {
      body.append(h("section", { class: "hidden-objects", "aria-labelledby": "hidden-title" },
        h("h2", { id: "hidden-title" }, "Hidden by the rules"),
        h("p", {}, `Clients never see these; they are hidden by ${rules.files.join(", ") || "the rules"}.`),
        h("ul", {}, [...rules.hidden_tables.map((t) => h("li", {}, h("span", { class: "badge hidden" }, "hidden table"), " ", h("code", {}, t))),
          ...rules.hidden_columns.map((c) => h("li", {}, h("span", { class: "badge hidden" }, "hidden column"), " ", h("code", {}, c)))])));
    }
    for (const t of schema.tables) {
      const fk = new Map(t.foreign_keys.flatMap((k) => k.columns.map((c, i) => [c, `${k.ref_table}.${k.ref_columns[i]}`])));
      body.append(h("details", { class: "table-info" },
        h("summary", {}, h("strong", {}, t.schema === "public" ? t.name : `${t.schema}.${t.name}`),
          ` ${t.kind} · ~${t.estimated_rows} rows`, t.comment ? ` — ${t.comment}` : ""),
        h("table", { class: "grid" }, h("caption", { class: "sr-only" }, `Columns of ${t.name}`),
          h("thead", {}, h("tr", {}, ["Column", "Type", "Null", "Key", "Comment"].map((c) => h("th", { scope: "col" }, c)))),
          h("tbody", {}, t.columns.map((c) => h("tr", {},
            h("td", {}, c.name), h("td", {}, h("code", {}, c.type)), h("td", {}, c.nullable ? "yes" : "no"),
            h("td", {}, [t.primary_key.includes(c.name) ? "PK" : "", fk.has(c.name) ? `→ ${fk.get(c.name)}` : ""].filter(Boolean).join(" ")),
            h("td", {}, c.comment || "")))))));
    }
  }
}

export function fail(el, error, ctx) {
  if (error instanceof ApiError && error.status === 401) return ctx.signedOut();
  clear(el).append(h("p", { class: "error", role: "alert" }, error.message));
}
