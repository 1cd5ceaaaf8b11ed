// The result table: sortable columns (buttons in the headers, aria-sort), pages of PAGE rows for large
// results, copy as TSV, download as CSV (both of every row, in the sorted order).

import { h, fmt } from "./dom.js";

const NUMERIC = /^(int|float|numeric|decimal|real|double|money|smallint|bigint)/;

export const PAGE = 100;

export function isNumeric(type) { return NUMERIC.test(type || ""); }

function compare(a, b, numeric) {
  if (a === null || a === undefined) return b === null || b === undefined ? 0 : 1;
  if (b === null || b === undefined) return -1;
  if (numeric) return Number(a) - Number(b);
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

// Rows are untrusted data: a cell a spreadsheet would read as a formula (=, +, -, @, tab, CR first; plain
// numbers such as -5 excepted) gets a leading apostrophe, so opening the download never runs what a row says.
function csvCell(v) {
  let s = v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : String(v);
  if (/^[=+\-@\t\r]/.test(s) && !/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) s = `'${s}`;
  return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

export function toCSV(columns, rows) {
  return [columns.map((c) => csvCell(c.name)), ...rows.map((r) => r.map(csvCell))].map((l) => l.join(",")).join("\r\n") + "\r\n";
}

export function resultTable(columns, rows, { caption = "Result", say = () => {} } = {}) {
  let order = rows.map((_, i) => i);
  let sorted = { col: -1, dir: "none" };
  const tbody = h("tbody");
  const heads = columns.map((c, i) => h("th", { scope: "col", "aria-sort": "none" },
    h("button", { type: "button", class: "sort", onclick: () => sortBy(i) }, c.name,
      h("span", { class: "type" }, ` ${c.type}`))));

  let page = 0;
  const pages = Math.max(1, Math.ceil(rows.length / PAGE));
  const where = h("span", { class: "page-at", "aria-live": "polite" });
  const prev = h("button", { type: "button", class: "page-prev", onclick: () => turn(-1) }, "Previous rows");
  const next = h("button", { type: "button", class: "page-next", onclick: () => turn(1) }, "Next rows");
  const pager = pages > 1 ? h("div", { class: "toolbar pager" }, prev, where, next) : null;
  function turn(by) {
    page = Math.min(pages - 1, Math.max(0, page + by));
    render();
    say(where.textContent);
  }
  function render() {
    const shown = order.slice(page * PAGE, (page + 1) * PAGE);
    tbody.replaceChildren(...shown.map((i) => h("tr", {}, rows[i].map((v, j) =>
      h("td", { class: [v === null ? "null" : "", isNumeric(columns[j].type) ? "num" : ""].join(" ").trim() || null }, fmt(v))))));
    if (pager) {
      where.textContent = `Rows ${page * PAGE + 1}–${page * PAGE + shown.length} of ${rows.length}`;
      prev.disabled = page === 0;
      next.disabled = page === pages - 1;
    }
  }
  function sortBy(col) {
    const dir = sorted.col === col && sorted.dir === "ascending" ? "descending" : "ascending";
    const numeric = isNumeric(columns[col].type);
    order = rows.map((_, i) => i).sort((a, b) => compare(rows[a][col], rows[b][col], numeric) * (dir === "ascending" ? 1 : -1));
    sorted = { col, dir };
    page = 0;
    heads.forEach((th, i) => th.setAttribute("aria-sort", i === col ? dir : "none"));
    render();
    say(`Sorted by ${columns[col].name}, ${dir}.`);
  }
  render();

  const copy = h("button", { type: "button", onclick: async () => {
    const text = [columns.map((c) => c.name), ...order.map((i) => rows[i].map(fmt))].map((r) => r.join("\t")).join("\n");
    try { await navigator.clipboard.writeText(text); say(`Copied ${rows.length} rows.`); }
    catch { say("The browser did not allow copying; use Download CSV instead."); }
  } }, "Copy");
  const download = h("button", { type: "button", onclick: () => {
    const url = URL.createObjectURL(new Blob([toCSV(columns, order.map((i) => rows[i]))], { type: "text/csv" }));
    const a = h("a", { href: url, download: "result.csv" });
    document.body.append(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
    say("CSV downloaded.");
  } }, "Download CSV");

  return h("div", { class: "result" },
    h("div", { class: "toolbar" }, copy, download),
    h("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": caption },
      h("table", { class: "grid" }, h("caption", {}, caption), h("thead", {}, h("tr", {}, heads)), tbody)), pager);
}
