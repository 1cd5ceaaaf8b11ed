// A chart of an answer, as inline SVG: a line over a time or numeric dimension, bars over a category, for
// the first numeric measure; the reader may switch between the two. chartSpec() decides whether the result has such a shape at all.

import { isNumeric } from "./table.js";
import { h } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
const TIME = /^(date|timestamp|timestamptz|time)/;
const COMPACT = new Intl.NumberFormat(undefined, { notation: "compact", maximumSignificantDigits: 3 });

function s(tag, attrs = {}, text) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

// The dimension is the first non-numeric column; when every column is numeric (a month number, a year and
// a total) the first column is the dimension and the next one the measure, drawn as a line.
export function chartSpec(columns, rows) {
  if (!rows.length || rows.length > 500 || columns.length < 2) return null;
  let dim = columns.findIndex((c) => !isNumeric(c.type));
  let numericDim = false;
  if (dim < 0) { dim = 0; numericDim = true; }
  const measure = columns.findIndex((c, i) => i !== dim && i > 0 && isNumeric(c.type));
  if (measure < 0) return null;
  const time = TIME.test(columns[dim].type);
  if (!time && !numericDim && rows.length > 50) return null;  // too many categories to read as bars
  return { dim, measure, kind: time || numericDim ? "line" : "bar" };
}

// A chart with its controls: show or hide it, bars or a line (whatever chartSpec suggested first).
export function chartView(columns, rows) {
  const spec = chartSpec(columns, rows);
  if (!spec) return null;
  const n = ++views;
  const holder = h("figure", { class: "chart-box", id: `chart-${n}` });
  const kind = h("select", { id: "chart-kind", "aria-label": "Chart type" },
    ["bar", "line"].map((k) => h("option", { value: k, selected: k === spec.kind }, k === "bar" ? "Bars" : "Line")));
  const draw = () => {
    const now = { ...spec, kind: kind.value };
    holder.replaceChildren(chart(columns, rows, now),
      h("figcaption", {}, `${now.kind === "line" ? "Line" : "Bar"} chart: ${columns[now.measure].name} by ${columns[now.dim].name}`));
  };
  kind.addEventListener("change", draw);
  draw();
  const toggle = h("input", { type: "checkbox", id: "chart-toggle", checked: true, "aria-controls": holder.id,
    onchange: () => { holder.hidden = !toggle.checked; kind.disabled = !toggle.checked; } });
  return h("div", { class: "chart-view" },
    h("p", { class: "toolbar" }, toggle, " ", h("label", { for: "chart-toggle" }, "Show chart"), " ",
      h("label", { for: "chart-kind" }, "Type"), kind), holder);
}

let views = 0;

export function chart(columns, rows, spec) {
  const W = 640, H = 280, L = 64, R = 12, T = 12, B = 64;
  const values = rows.map((r) => Number(r[spec.measure]) || 0);
  const labels = rows.map((r) => (r[spec.dim] === null ? "NULL" : String(r[spec.dim])));
  const max = Math.max(0, ...values), min = Math.min(0, ...values);
  const span = max - min || 1;
  const y = (v) => T + (H - T - B) * (1 - (v - min) / span);
  const step = (W - L - R) / Math.max(1, rows.length);
  const x = (i) => L + step * i + step / 2;
  const title = `${columns[spec.measure].name} by ${columns[spec.dim].name}`;
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: `chart chart-${spec.kind}`, "aria-label": `${spec.kind === "line" ? "Line" : "Bar"} chart of ${title}` });
  svg.append(s("title", {}, title));
  for (const t of [min, min + span / 2, max]) {
    svg.append(s("line", { x1: L, x2: W - R, y1: y(t), y2: y(t), class: "gridline" }));
    svg.append(s("text", { x: L - 6, y: y(t) + 4, "text-anchor": "end", class: "axis" }, COMPACT.format(t)));
  }
  if (spec.kind === "line") {
    const points = values.map((v, i) => `${x(i)},${y(v)}`).join(" ");
    svg.append(s("polyline", { points, class: "series" }));
    values.forEach((v, i) => svg.append(s("circle", { cx: x(i), cy: y(v), r: 3, class: "dot" }, undefined)));
  } else {
    values.forEach((v, i) => {
      const top = y(Math.max(v, 0)), bottom = y(Math.min(v, 0));
      const bar = s("rect", { x: x(i) - step * 0.35, width: step * 0.7, y: top, height: Math.max(1, bottom - top), class: "bar" });
      bar.append(s("title", {}, `${labels[i]}: ${v}`));
      svg.append(bar);
    });
  }
  const every = Math.ceil(rows.length / 12);
  labels.forEach((label, i) => {
    if (i % every) return;
    const text = label.length > 14 ? label.slice(0, 13) + "…" : label;
    svg.append(s("text", { x: x(i), y: H - B + 14, "text-anchor": "end", transform: `rotate(-35 ${x(i)} ${H - B + 14})`, class: "axis" }, text));
  });
  return svg;
}
