// Small DOM helpers. Text from the network is only ever set as text (never parsed as HTML).

/** The element with this id. */
export const byId = (id) => document.getElementById(id);

/** Creates an element with attributes and children (strings become text nodes). */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "className") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** An element in the SVG namespace with attributes. */
export function svg(tag, attributes = {}) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}

/** A time of day for a Unix time in milliseconds; "—" for 0 (never). */
export const timeOfDay = (ms) => (ms ? new Date(ms).toLocaleString() : "—");
