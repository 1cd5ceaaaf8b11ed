// Guideline (dba): versions with status, text, a diff between any two, provenance, the gate's evaluation;
// regenerate, activate, roll back (activating a version that was active before); each version links to its
// Regressions view (regressions.js).

import { get, post } from "./api.js";
import { clear, h, liveRegion } from "./dom.js";
import { diffLines } from "./diff.js";
import { fail } from "./schema.js";
import { databasePicker } from "./pick.js";

export async function show(root, ctx) {
  let opening = 0;  // only the last version asked for is shown, whichever answer arrives last
  const live = liveRegion();
  const versions = h("div", { id: "gl-versions" });
  const detail = h("div", { id: "gl-detail" });
  const diff = h("div", { id: "gl-diff" });
  const shipped = h("div", { id: "gl-shipped" });
  const regen = h("button", { type: "button", id: "gl-regenerate" }, "Regenerate now");
  root.append(
    h("section", { class: "panel", "aria-labelledby": "gl-title" }, h("h1", { id: "gl-title" }, "Guideline"),
      h("p", {}, "MAGIC writes the guideline from corrections; a candidate becomes active only through the gate, or a DBA's decision."),
      h("div", { class: "toolbar" }, regen), live, versions),
    h("section", { class: "panel", "aria-labelledby": "gl-shipped-title" }, h("h2", { id: "gl-shipped-title" }, "Shipped guideline"), shipped),
    h("section", { class: "panel", "aria-labelledby": "gl-diff-title" }, h("h2", { id: "gl-diff-title" }, "Compare versions"), diff),
    h("section", { class: "panel", "aria-labelledby": "gl-detail-title" }, h("h2", { id: "gl-detail-title" }, "Version"), detail));
  regen.addEventListener("click", async () => {
    regen.disabled = true;
    live.textContent = "Regenerating: MAGIC runs on the pending corrections…";
    try {
      const r = await post("../v1/guidelines/regenerate", {});
      live.textContent = `Regeneration: ${r.outcome}${r.version ? `, version ${r.version}` : ""}${r.error ? ` (${r.error})` : ""}.`;
      await load();
    } catch (e) { live.textContent = e.message; } finally { regen.disabled = false; }
  });
  await load();
  showShipped();

  // The file a database falls back to, and whether it is what the database's questions use now.
  async function showShipped() {
    let picker;
    try { picker = await databasePicker("gl-db", render); } catch (e) { return fail(shipped, e, ctx); }
    const body = h("div", {});
    clear(shipped).append(picker.field, body);
    if (!picker.empty) render(picker.select.value);
    async function render(db) {
      try {
        const [file, list] = await Promise.all([get(`../v1/guidelines/shipped?database=${encodeURIComponent(db)}`),
          get(`../v1/guidelines?database=${encodeURIComponent(db)}`).catch(() => null)]);
        const used = !list || !list.in_force || list.in_force.version === null;
        clear(body).append(h("p", { id: "gl-shipped-state", class: used ? "ok" : "" }, used
            ? `In force for ${db}: no stored version is active, its questions use the shipped file (${file.version}).`
            : `Not in force for ${db}: version ${list.in_force.version} is (${list.in_force.source}). A reset goes back to this file.`),
          h("pre", { class: "guideline-text", id: "gl-shipped-text", tabindex: "0" }, file.text || "(empty: no guideline)"));
      } catch (e) { fail(body, e, ctx); }
    }
  }

  async function load(selected) {
    let list;
    try { list = await get("../v1/guidelines"); } catch (e) { return fail(versions, e, ctx); }
    clear(versions);
    if (!list.versions.length) {
      versions.append(h("p", {}, "No stored version yet: the shipped guideline file is in force."));
      clear(diff); clear(detail);
      return;
    }
    versions.append(h("table", { class: "grid" }, h("caption", {}, list.active ? `Version ${list.active} is active` : "The shipped guideline file is in force"),
      h("thead", {}, h("tr", {}, ["Version", "Status", "Created", "Corrections", "Gate", ""].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, list.versions.map((v) => h("tr", { "data-version": v.version },
        h("td", {}, String(v.version)), h("td", {}, h("span", { class: `badge ${v.status}` }, v.status)),
        h("td", {}, v.created_at.replace("T", " ").slice(0, 19)), h("td", {}, String(v.corrections)),
        h("td", {}, v.evaluation_passed === null ? "not evaluated" : v.evaluation_passed ? "passed" : "failed"),
        h("td", {}, h("button", { type: "button", class: "link", onclick: () => open(v.version) }, `Open version ${v.version}`)))))));
    diffForm(list.versions);
    open(selected || list.active || list.versions[0].version);
  }

  function diffForm(list) {
    const numbers = list.map((v) => v.version).sort((x, y) => x - y);  // default: the newest against its predecessor
    const opts = (sel) => list.map((v) => h("option", { value: v.version, selected: v.version === sel }, `${v.version} (${v.status})`));
    const a = h("select", { id: "gl-from" }, opts(numbers[Math.max(0, numbers.length - 2)]));
    const b = h("select", { id: "gl-to" }, opts(numbers[numbers.length - 1]));
    const out = h("div", { class: "diff-out" });
    const form = h("form", { class: "toolbar", "aria-label": "Compare two versions" },
      h("label", { for: "gl-from" }, "From"), a, h("label", { for: "gl-to" }, "To"), b, h("button", { type: "submit", id: "gl-diff-show" }, "Show diff"));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      try {
        const [x, y] = await Promise.all([get(`../v1/guidelines/${a.value}`), get(`../v1/guidelines/${b.value}`)]);
        const lines = diffLines(x.text, y.text);
        const added = lines.filter((l) => l[0] === "+").length, removed = lines.filter((l) => l[0] === "-").length;
        clear(out).append(h("p", { role: "status" }, `Version ${a.value} → ${b.value}: ${added} line(s) added, ${removed} removed.`),
          h("pre", { class: "diff", tabindex: "0", "aria-label": `Diff of versions ${a.value} and ${b.value}` },
            lines.map(([op, text]) => h(op === "+" ? "ins" : op === "-" ? "del" : "span", {}, `${op} ${text}\n`))));
      } catch (error) { clear(out).append(h("p", { class: "error", role: "alert" }, error.message)); }
    });
    clear(diff).append(form, out);
  }

  async function open(version) {
    const ticket = ++opening;
    detail.setAttribute("aria-busy", "true");  // until the last version asked for is shown
    let v;
    try { v = await get(`../v1/guidelines/${version}`); } catch (e) {
      if (ticket === opening) detail.setAttribute("aria-busy", "false");
      return fail(detail, e, ctx);
    }
    if (ticket !== opening) return;
    detail.setAttribute("aria-busy", "false");
    const force = h("input", { type: "checkbox", id: "gl-force" });
    const rollback = v.status === "retired" && v.activated_at;
    const activate = h("button", { type: "button", id: "gl-activate", disabled: v.status === "active", onclick: async () => {
      activate.disabled = true;
      live.textContent = `Activating version ${v.version}…`;
      try {
        const r = await post(`../v1/guidelines/${v.version}/activate`, { force: force.checked });
        live.textContent = `Version ${r.version} is ${r.status}.`;
        await load(v.version);
      } catch (e) {
        live.textContent = e.message;
        activate.disabled = false;
        if (e.code === "guideline_regressed" || e.problem?.report_id) {  // the replay's report names each question
          live.append(" ", h("a", { href: `#regressions/${v.version}`, id: "gl-regressions-refused" }, "See the regressions"));
        }
      }
    } }, rollback ? `Roll back to version ${v.version}` : `Activate version ${v.version}`);
    clear(detail).append(
      h("p", {}, h("strong", {}, `Version ${v.version}`), " ", h("span", { class: `badge ${v.status}`, id: "gl-status" }, v.status),
        v.parent ? ` · from version ${v.parent}` : "", v.activated_at ? ` · activated ${v.activated_at.replace("T", " ").slice(0, 19)}` : ""),
      h("div", { class: "toolbar" }, activate, force, h("label", { for: "gl-force" }, "Skip the gate (force)"),
        h("a", { href: `#regressions/${v.version}`, id: "gl-regressions" }, `Regressions of version ${v.version}`)),
      h("h3", {}, "Text"), h("pre", { class: "guideline-text", tabindex: "0" }, v.text),
      h("h3", {}, "Provenance"), keyValues(v.provenance),
      h("h3", {}, "Gate evaluation"), v.evaluation ? keyValues(v.evaluation) : h("p", {}, "Not evaluated."));
  }
}

function keyValues(obj) {
  return h("dl", { class: "kv" }, Object.entries(obj || {}).flatMap(([k, v]) => [h("dt", {}, k),
    h("dd", {}, typeof v === "object" && v !== null ? JSON.stringify(v) : String(v))]));
}
