// Starter questions on the Ask page: what this database is known to answer well
// (GET /v1/databases/{name}/starters). Each is a button that asks it.

import { get } from "./api.js";
import { clear, h } from "./dom.js";

export async function starterList(holder, database, askIt) {
  clear(holder);
  if (!database) return;
  let found;
  try {
    found = await get(`../v1/databases/${encodeURIComponent(database)}/starters`);
  } catch {
    return;  // a courtesy: the question box works without them
  }
  if (!found.starters.length) return;
  holder.append(h("p", { class: "starters-head" }, "Try a question this database answers well:"),
    h("ul", { class: "starters" }, found.starters.map((s) => h("li", {},
      h("button", { type: "button", class: "starter", title: s.source === "verified" ? "A verified question" : s.source === "template" ? "A trusted template" : s.source,
        onclick: () => askIt(s.question) }, s.question)))));
}
