// A small line chart drawn in SVG, no library: one <figure> with a caption (title and the
// latest values) and the lines of the last samples. The figure carries `data-samples` and
// `data-last` (the latest values as JSON) so that a test or a script can read what is drawn.

import { el, svg } from "./dom.js";

const WIDTH = 320;
const HEIGHT = 120;
const PAD = { left: 38, right: 6, top: 8, bottom: 16 };

/** A rounded-up top for the y axis: 1, 2 or 5 times a power of ten. */
export function niceCeiling(value) {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (value <= step * power) return step * power;
  return 10 * power;
}

const format = (value) =>
  value === null || value === undefined ? "—" : Number.isInteger(value) ? String(value) : value.toFixed(1);

export class LineChart {
  /**
   * @param {HTMLElement} figure where to draw
   * @param {{title: string, series: {key: string, label: string, className: string}[], absent: string}} options
   *   `absent`: the text shown while no series has a value (e.g. webhooks off)
   */
  constructor(figure, { title, series, absent }) {
    this.figure = figure;
    this.title = title;
    this.series = series;
    this.absent = absent;
  }

  /** Draws `points` (oldest first), each with a number or null for every series key. */
  draw(points) {
    const last = points.at(-1) ?? {};
    const latest = Object.fromEntries(this.series.map(({ key }) => [key, last[key] ?? null]));
    this.figure.dataset.samples = String(points.length);
    this.figure.dataset.last = JSON.stringify(latest);
    const values = points.flatMap((point) => this.series.map(({ key }) => point[key])).filter((v) => v !== null && v !== undefined);
    const caption = el("figcaption", {},
      el("span", { className: "chart-title" }, this.title),
      ...this.series.map(({ key, label, className }) =>
        el("span", { className: `legend ${className}`, "data-series": key }, `${label} ${format(latest[key])}`)));
    if (values.length === 0 && points.length > 0) {
      this.figure.replaceChildren(caption, el("p", { className: "hint chart-absent" }, this.absent));
      return;
    }
    const top = niceCeiling(Math.max(...values, 0));
    const first = points[0]?.at ?? 0;
    const span = Math.max(1, (points.at(-1)?.at ?? 0) - first);
    const x = (at) => PAD.left + ((at - first) / span) * (WIDTH - PAD.left - PAD.right);
    const y = (value) => HEIGHT - PAD.bottom - (value / top) * (HEIGHT - PAD.top - PAD.bottom);
    const picture = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-label": this.title });
    for (const [value, label] of [[0, "0"], [top, format(top)]]) {
      picture.append(svg("line", { x1: PAD.left, x2: WIDTH - PAD.right, y1: y(value), y2: y(value), class: "grid-line" }));
      const text = svg("text", { x: PAD.left - 4, y: y(value) + 4, class: "axis-label", "text-anchor": "end" });
      text.textContent = label;
      picture.append(text);
    }
    for (const { key, className } of this.series) {
      const drawn = points.filter((point) => point[key] !== null && point[key] !== undefined);
      if (drawn.length === 0) continue;
      const coordinates = drawn.map((point) => `${x(point.at).toFixed(1)},${y(point[key]).toFixed(1)}`);
      if (drawn.length === 1) coordinates.push(`${(x(drawn[0].at) + 2).toFixed(1)},${y(drawn[0][key]).toFixed(1)}`);
      picture.append(svg("polyline", { points: coordinates.join(" "), class: `series ${className}`, "data-series": key }));
    }
    const seconds = Math.round(span / 1000);
    const axis = svg("text", { x: WIDTH - PAD.right, y: HEIGHT - 3, class: "axis-label", "text-anchor": "end" });
    axis.textContent = points.length > 1 ? `last ${seconds} s` : "";
    picture.append(axis);
    this.figure.replaceChildren(caption, picture);
  }
}
