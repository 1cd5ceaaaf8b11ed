// Rules and examples (dba): the rules in force and `rules check` per database; the review queue of proposed
// verified examples with approve and reject; the approved ones.

import { get, post } from "./api.js";
import { append, clear, h, liveRegion } from "./dom.js";
import { databasePicker } from "./pick.js";
import { highlight } from "./sql.js";
import { fail } from "./schema.js";
import { rulesEditor } from "./rulesedit.js";

export async function show(root, ctx) {
  const rulesBody = h("div", { id: "rules-body" });
  const editor = h("div", { id: "rules-editor" });
  const queue = h("div", { id: "examples-queue" });
  const approved = h("div", { id: "examples-approved" });
  const live = liveRegion();
  root.append(
    h("section", { class: "panel", "aria-labelledby": "rules-title" }, h("h1", { id: "rules-title" }, "Rules and examples"), rulesBody, editor),
    h("section", { class: "panel", "aria-labelledby": "queue-title" }, h("h2", { id: "queue-title" }, "Proposed examples"),
      h("p", {}, "Question and SQL pairs that clients sent as feedback. Only approved ones are shown to the model or answer questions."), live, queue),
    h("section", { class: "panel", "aria-labelledby": "approved-title" }, h("h2", { id: "approved-title" }, "Approved examples"), approved));
  let picker;
  try { picker = await databasePicker("rules-db", loadRules); } catch (e) { return fail(rulesBody, e, ctx); }
  rulesBody.before(picker.field);
  if (!picker.empty) loadRules(picker.select.value);
  const editorFor = (db) => rulesEditor(editor, db, loadRules);
  picker.select.addEventListener("change", () => editorFor(picker.select.value));
  if (!picker.empty) editorFor(picker.select.value);
  loadExamples();

  async function loadRules(db) {
    clear(rulesBody).append(h("p", { role: "status" }, "Loading…"));
    let r;
    try { r = await get(`../v1/databases/${encodeURIComponent(db)}/rules`); } catch (e) { return fail(rulesBody, e, ctx); }
    const errors = r.problems.filter((p) => p.severity === "error").length;
    const list = (title, items, render = (x) => h("code", {}, x)) => items.length ?
      [h("h3", {}, title), h("ul", {}, items.map((x) => h("li", {}, render(x))))] : [];
    const warnings = r.problems.length - errors, roles = r.privileges.length;
    // Green only when nothing at all is wrong: role problems under a clean file check are still problems.
    append(clear(rulesBody), [
      h("p", { id: "rules-check", class: errors ? "error" : warnings || roles ? "warn" : "ok" },
        `rules check: ${errors} error(s), ${warnings} warning(s)` + (r.files.length ? ` in ${r.files.join(", ")}` : " (no rule file for this database)") +
        (roles ? `; the database role: ${roles} problem(s), below` : "")),
      r.problems.length ? h("ul", { class: "problems" }, r.problems.map((p) => h("li", {}, h("code", {}, `${p.file}:${p.line}`), ` ${p.severity}: ${p.message}`))) : null,
      r.privileges.length ? h("ul", { class: "problems" }, r.privileges.map((p) => h("li", {}, `role: ${p}`))) : null,
      ...list("Hidden tables", r.hidden_tables), ...list("Hidden columns", r.hidden_columns),
      ...list("Instructions to the model", r.instructions, (x) => x),
      ...list("Extra functions allowed", r.extra_functions),
      ...list("Limits", Object.entries(r.limits), ([k, v]) => `${k} = ${v}`),
      ...list("Required conditions", r.required_conditions, (c) => [h("strong", {}, c.name), ` on ${c.applies_to}: `, h("code", {}, c.sql), ` — ${c.message}`]),
      ...list("Result checks", r.result_checks, (c) => [h("strong", {}, c.name), ` ${c.column}`, c.min !== null ? ` ≥ ${c.min}` : "", c.max !== null ? ` ≤ ${c.max}` : "", c.not_null ? " not null" : ""])]);
  }

  async function loadExamples() {
    let proposed, ok;
    try {
      [proposed, ok] = await Promise.all([get("../v1/examples?status=proposed"), get("../v1/examples?status=approved")]);
    } catch (e) { return fail(queue, e, ctx); }
    clear(queue).append(proposed.examples.length ? h("ul", { class: "cards" }, proposed.examples.map((e) => exampleCard(e, true)))
      : h("p", {}, "Nothing waits for review."));
    clear(approved).append(ok.examples.length ? h("ul", { class: "cards" }, ok.examples.map((e) => exampleCard(e, false)))
      : h("p", {}, "No approved example yet."));
  }

  function exampleCard(e, reviewable) {
    const noteId = `note-${e.id}`;
    const note = h("input", { id: noteId, type: "text", maxlength: 4000 });
    const decide = async (what) => {
      try {
        await post(`../v1/examples/${e.id}/${what}`, note.value.trim() ? { note: note.value.trim() } : {});
        live.textContent = `Example #${e.id} ${what === "approve" ? "approved" : "rejected"}.`;
        loadExamples();
      } catch (error) { live.textContent = error.message; }
    };
    return h("li", { class: "card", "data-example": e.id },
      h("p", {}, h("strong", {}, `#${e.id} · ${e.database}`), ` · ${e.source} · by ${e.proposed_by}`),
      h("p", { class: "question" }, e.question),
      e.note ? h("p", { class: "analyst-note" }, h("strong", {}, "Analyst's note: "), e.note) : null,
      // The original answer beside what is proposed, when the proposal corrects it.
      e.original_sql && e.original_sql.trim() !== e.sql.trim()
        ? h("div", { class: "side-by-side" },
          h("div", { class: "original" }, h("h4", {}, `Original answer: ${e.original_status || "–"}`,
            e.original_row_count !== null && e.original_row_count !== undefined ? `, ${e.original_row_count} rows` : ""), highlight(e.original_sql)),
          h("div", { class: "proposed" }, h("h4", {}, e.source === "correction" ? "Correction" : "Proposed"), highlight(e.sql)))
        : [e.original_status ? h("p", { class: "muted" }, `Answered ${e.original_status}` +
            (e.original_row_count !== null && e.original_row_count !== undefined ? `, ${e.original_row_count} rows` : "") +
            (e.verdict ? `; the analyst said ${e.verdict}.` : ".")) : null, highlight(e.sql)],
      reviewable ? h("div", { class: "toolbar" },
        h("label", { for: noteId }, "Note"), note,
        h("button", { type: "button", class: "approve", onclick: () => decide("approve") }, `Approve #${e.id}`),
        h("button", { type: "button", class: "reject", onclick: () => decide("reject") }, `Reject #${e.id}`))
        : h("div", { class: "toolbar" }, h("small", {}, `approved by ${e.reviewed_by || "–"}${e.review_note ? `: ${e.review_note}` : ""}`),
          h("button", { type: "button", class: "reject", onclick: () => decide("reject") }, `Withdraw #${e.id}`)));
  }
}
