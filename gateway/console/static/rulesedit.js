// Editing a database's rules from the console (dba): hidden columns, instructions and limits, kept in
// rules/<database>/console.yaml (PUT /v1/databases/{name}/rules/console). The gateway checks the edit like
// `rules check` and refuses it with the problems, or when the rules folder is read-only.

import { get, request } from "./api.js";
import { clear, h } from "./dom.js";

const lines = (text) => text.split("\n").map((l) => l.trim()).filter(Boolean);

export async function rulesEditor(holder, db, onSaved) {
  clear(holder);
  let now;
  try { now = await get(`../v1/databases/${encodeURIComponent(db)}/rules/console`); } catch (e) {
    holder.append(h("p", { class: "error" }, e.message));
    return;
  }
  const hidden = h("textarea", { id: "re-hidden", rows: 4, spellcheck: "false", "aria-describedby": "re-hidden-hint" },
    now.hidden_columns.join("\n"));
  const instructions = h("textarea", { id: "re-instructions", rows: 4 }, now.instructions.join("\n"));
  const limits = h("textarea", { id: "re-limits", rows: 2, spellcheck: "false", "aria-describedby": "re-limits-hint" },
    Object.entries(now.limits).map(([k, v]) => `${k} = ${v}`).join("\n"));
  const result = h("div", { id: "re-result", role: "status" });
  const save = h("button", { type: "submit", id: "re-save" }, "Save rules");
  const form = h("form", { id: "rules-edit", "aria-label": `Edit the rules of ${db}` },
    h("div", { class: "field" }, h("label", { for: "re-hidden" }, "Hidden columns (one table.column per line)"), hidden,
      h("small", { id: "re-hidden-hint" }, "Never shown to the model, blocked in SQL. Columns hidden by the other rule files stay hidden.")),
    h("div", { class: "field" }, h("label", { for: "re-instructions" }, "Instructions to the model (one per line)"), instructions),
    h("div", { class: "field" }, h("label", { for: "re-limits" }, "Limits (name = value per line)"), limits,
      h("small", { id: "re-limits-hint" }, "max_rows, max_joins, max_subquery_depth; only ones the other files do not set.")),
    h("div", { class: "toolbar" }, save), result);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const parsed = {};
    for (const line of lines(limits.value)) {
      const [k, v] = line.split("=").map((x) => x.trim());
      parsed[k] = Number(v);
    }
    save.disabled = true;
    try {
      await request("PUT", `../v1/databases/${encodeURIComponent(db)}/rules/console`,
        { hidden_columns: lines(hidden.value), instructions: lines(instructions.value), limits: parsed });
      clear(result).append(h("p", { class: "ok" }, `Saved to rules/${db}/console.yaml; in force from the next question.`));
      onSaved(db);
    } catch (error) {
      const problems = (error.problem && error.problem.problems) || [];
      clear(result).append(h("p", { class: "error", role: "alert", id: "re-error" }, error.message),
        problems.length ? h("ul", { class: "problems" }, problems.map((p) => h("li", {}, p.file ? h("code", {}, `${p.file}:${p.line}`) : "", ` ${p.message}`))) : null);
    } finally { save.disabled = false; }
  });
  holder.append(h("h3", {}, "Edit from the console"), form);
}
