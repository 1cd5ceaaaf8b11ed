// The database picker shared by the DBA pages.

import { get } from "./api.js";
import { h } from "./dom.js";

let cached = null;

export async function databasePicker(idName, onChange) {
  cached = cached || (await get("../v1/databases")).databases;
  const select = h("select", { id: idName, onchange: () => onChange(select.value) },
    cached.map((d) => h("option", { value: d.name }, d.name)));
  return { field: h("div", { class: "field" }, h("label", { for: idName }, "Database"), select), select, empty: !cached.length };
}
