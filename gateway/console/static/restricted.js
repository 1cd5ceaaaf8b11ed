// A question or statement that needs data the rules restrict, said in words. The gateway masks hidden
// names in findings ("[hidden]") for everyone; this note says what that means and what to do, naming
// nothing the SQL did not already say: a column named in the SQL text the caller sees was named by it (or
// by the model, which never sees hidden names and guessed it), so no hidden name leaks from here.

import { h } from "./dom.js";

const RESTRICTED = { hidden_column: "a column", hidden_table: "a table" };

export function restrictedNote(findings, { database, role }) {
  const kinds = [...new Set((findings || []).map((f) => RESTRICTED[f.code]).filter(Boolean))];
  if (!kinds.length) return null;
  const what = kinds.join(" and ");
  return h("div", { class: "restricted", id: "restricted-note", role: "note" },
    h("p", {}, h("strong", {}, "Restricted data. "),
      `This needs ${what} that the rules of ${database} restrict: it is never shown to the model or returned to anyone, ` +
      "so no rewording can answer it. The gateway does not name restricted data; the findings above show it as [hidden]."),
    h("p", {}, role === "client"
      ? `Ask a DBA of ${database} whether the answer can be given another way (an aggregate, another column), or ask without it.`
      : "As a DBA you can see what is hidden on the Schema and Rules pages, and change it there."));
}
