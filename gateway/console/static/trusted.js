// Trusted: the DBA's templates (parameters, usage, run with other values), and for a dba the questions the
// log suggests as new templates, with their counts. `starters` gives the Ask page its starter questions.

import { ApiError, get, post, request } from "./api.js";
import { append, clear, h, liveRegion } from "./dom.js";
import { highlight } from "./sql.js";
import { resultTable } from "./table.js";
import { fail } from "./schema.js";

const RANK = { client: 1, dba: 2, admin: 3 };

export async function show(root, ctx) {
  const live = liveRegion();
  const say = (text) => { live.textContent = text; };
  const list = h("div", { id: "templates" });
  const dba = ctx.me && RANK[ctx.me.role] >= RANK.dba;
  const suggested = h("div", { id: "suggestions" });
  root.append(
    h("section", { class: "panel", "aria-labelledby": "trusted-title" }, h("h1", { id: "trusted-title" }, "Trusted answers"),
      h("p", {}, "Templates a DBA approved: a question that matches one is answered by it without the model, labelled trusted. Run one here with other values."),
      live, list),
    dba ? h("section", { class: "panel", "aria-labelledby": "suggest-title" }, h("h2", { id: "suggest-title" }, "Suggested templates"),
      h("p", {}, "Questions asked often whose answers were marked right or approved. Promote one to make it a template (add parameters through the API or the CLI)."),
      suggested) : null);
  load();
  if (dba) loadSuggestions();

  async function load() {
    clear(list).append(h("p", { role: "status" }, "Loading…"));
    let found;
    try { found = (await get("../v1/templates")).templates; } catch (e) { return fail(list, e, ctx); }
    clear(list).append(found.length ? h("ul", { class: "cards" }, found.map(card))
      : h("p", {}, "No template yet." + (dba ? " Promote a suggested question below, or an approved example (POST /v1/templates)." : "")));
  }

  function card(t) {
    const inputs = {};
    const fields = t.parameters.map((p) => {
      const fid = `tp-${t.name}-${p.name}`;
      const input = p.values && p.values.length
        ? h("select", { id: fid }, p.values.map((v) => h("option", { value: v, selected: v === p.default }, v)))
        : h("input", { id: fid, type: "text", value: p.default ?? "", maxlength: 200, required: true });
      inputs[p.name] = input;
      return h("div", { class: "field" }, h("label", { for: fid }, `${p.name} (${p.column}, ${p.type})`), input);
    });
    const out = h("div", { class: "template-result" });
    const run = async () => {
      const parameters = Object.fromEntries(Object.entries(inputs).map(([k, el]) => [k, el.value]));
      clear(out).append(h("p", { role: "status" }, "Running…"));
      try {
        const a = await post(`../v1/templates/${encodeURIComponent(t.name)}/run`, { parameters });
        clear(out).append(
          h("p", { class: "answer-head" }, h("span", { class: "badge trusted" }, "trusted"), " ",
            h("span", { class: `badge ${a.status}` }, a.status), ` ${a.row_count} rows${a.truncated ? " (truncated)" : ""}`,
            h("small", { class: "rid" }, ` request ${a.request_id}`)),
          resultTable(a.columns, a.rows, { caption: `${t.name}: ${JSON.stringify(a.trusted.parameters)}`, say }));
        say(`${t.name}: ${a.row_count} rows.`);
      } catch (e) {
        if (e instanceof ApiError && e.status === 401) return ctx.signedOut();
        const suggestions = e.problem?.suggestions || [];
        append(clear(out), [h("p", { class: "error", role: "alert" }, e.message),
          suggestions.length ? h("p", { class: "suggest" }, "Try: ", suggestions.map((s, i) => [i ? ", " : "",
            h("button", { type: "button", class: "link", onclick: () => { inputs[e.problem.parameter].value = s; run(); } }, s)])) : null]);
        say(e.message);
      }
    };
    const remove = async () => {
      try { await request("DELETE", `../v1/templates/${encodeURIComponent(t.name)}`); say(`Template ${t.name} deleted.`); load(); }
      catch (e) { say(e.message); }
    };
    return h("li", { class: "card", "data-template": t.name },
      h("p", {}, h("strong", {}, t.name), ` · ${t.database} · used ${t.uses} time${t.uses === 1 ? "" : "s"}`,
        t.created_by ? h("small", {}, ` · by ${t.created_by}`) : ""),
      t.description ? h("p", {}, t.description) : null,
      h("ul", { class: "questions", "aria-label": "Questions it answers" }, t.questions.map((q) => h("li", { class: "question" }, q))),
      highlight(t.sql), ...fields,
      h("div", { class: "toolbar" },
        h("button", { type: "button", class: "primary", onclick: run }, `Run ${t.name}`),
        dba ? h("button", { type: "button", class: "reject", onclick: remove }, `Delete ${t.name}`) : null),
      out);
  }

  async function loadSuggestions() {
    let found;
    try { found = (await get("../v1/templates/suggestions")).suggestions; } catch (e) { return fail(suggested, e, ctx); }
    clear(suggested).append(found.length ? h("ul", { class: "cards" }, found.map((s, i) => {
      const nid = `sg-name-${i}`;
      const name = h("input", { id: nid, type: "text", maxlength: 63, pattern: "[a-z][a-z0-9_]*", required: true });
      const promote = async () => {
        const body = { database: s.database, name: name.value.trim(), questions: [s.question] };
        if (s.example_id) body.example_id = s.example_id; else body.sql = s.sql;
        try { await post("../v1/templates", body); say(`Template ${body.name} created.`); load(); loadSuggestions(); }
        catch (e) { say(e.message); }
      };
      return h("li", { class: "card", "data-suggestion": i },
        h("p", { class: "question" }, s.question),
        h("p", {}, `${s.database} · asked ${s.asked} · marked right ${s.confirmed} · approved ${s.approved}`),
        highlight(s.sql),
        h("div", { class: "toolbar" }, h("label", { for: nid }, "Template name"), name,
          h("button", { type: "button", onclick: promote }, "Promote")));
    })) : h("p", {}, "No question is asked often enough yet."));
  }
}

// Starter questions for the Ask page: the templates' questions with their defaults, as buttons that fill in
// the question. Empty (and silent) when the key sees no template.
export async function starters(database, fill) {
  let found = [];
  try { found = (await get(`../v1/templates?database=${encodeURIComponent(database)}`)).templates; } catch { return null; }
  const shown = found.filter((t) => t.starter);
  if (!shown.length) return null;
  return h("div", { class: "starters", id: "ask-starters" }, h("span", {}, "Trusted questions: "),
    shown.map((t) => h("button", { type: "button", class: "link", onclick: () => fill(t.starter) }, t.starter)));
}
