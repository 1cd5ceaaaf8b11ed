// Prometheus text format (what GET /metrics answers) into samples {name, labels, value}.

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseMetrics(text) {
  const samples = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] || "").matchAll(LABEL)) labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

// Sum of a metric's samples grouped by one label (or all together with by = null).
export function sumBy(samples, name, by) {
  const out = new Map();
  for (const s of samples) {
    if (s.name !== name) continue;
    const key = by ? s.labels[by] ?? "" : "";
    out.set(key, (out.get(key) || 0) + s.value);
  }
  return out;
}
