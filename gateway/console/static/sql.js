// A small SQL highlighter for display only (the gateway's parsers judge SQL; this only colours it):
// keywords, strings, numbers, comments and operators become spans with a class, everything else text.

import { h } from "./dom.js";

const KEYWORDS = new Set(`select from where group by order having limit offset join left right full inner outer
cross on using as and or not in is null like ilike between case when then else end with union all intersect
except distinct asc desc nulls first last over partition window filter lateral exists true false interval
values table recursive cast any some fetch rows row only date timestamp`.split(/\s+/));

const TOKEN = /(--[^\n]*|\/\*[\s\S]*?\*\/)|('(?:[^']|'')*'?)|("(?:[^"]|"")*"?)|(\b\d+(?:\.\d+)?\b)|([A-Za-z_][A-Za-z0-9_$]*)|(::|<>|!=|<=|>=|\|\||[-+*/%=<>(),.;])/g;

export function highlight(sql) {
  const code = h("code", { class: "sql" });
  let last = 0;
  for (const m of sql.matchAll(TOKEN)) {
    if (m.index > last) code.append(sql.slice(last, m.index));
    const [text, comment, str, ident, num, word] = m;
    let cls = "op";
    if (comment) cls = "cm";
    else if (str) cls = "st";
    else if (ident) cls = "id";
    else if (num) cls = "nu";
    else if (word) cls = KEYWORDS.has(word.toLowerCase()) ? "kw" : (sql[m.index + word.length] === "(" ? "fn" : null);
    code.append(cls ? h("span", { class: `t-${cls}` }, text) : text);
    last = m.index + text.length;
  }
  if (last < sql.length) code.append(sql.slice(last));
  return h("pre", { class: "code" }, code);
}
