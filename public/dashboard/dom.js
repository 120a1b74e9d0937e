/*
 * Building the page's elements: text always goes in as text (never parsed as HTML), and nothing gets an
 * inline style (the page's policy allows styles from its stylesheet only).
 */

/**
 * @typedef {string | number | boolean | null | undefined} AttributeValue
 * @typedef {Node | string | number | null | undefined | false} Child
 */

/**
 * An element with attributes (`class`, `data-*`, `aria-*`, `hidden`, …; false or null leaves one out) and
 * children (strings become text nodes).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, AttributeValue>} [attributes]
 * @param {...(Child | Child[])} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h (tag, attributes = {}, ...children) {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue
    element.setAttribute(name, value === true ? '' : String(value))
  }
  append(element, children)
  return element
}

/**
 * @param {Element} parent
 * @param {Array<Child | Child[]>} children
 */
export function append (parent, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue
    parent.append(typeof child === 'number' ? String(child) : child)
  }
}

/**
 * The element of an id the page's markup holds.
 * @template {HTMLElement} [T=HTMLElement]
 * @param {string} id
 * @returns {T}
 */
export function byId (id) {
  const element = document.getElementById(id)
  if (!element) throw new Error(`the page has no #${id}`)
  return /** @type {T} */ (element)
}

/**
 * Replaces an element's children.
 * @param {Element} parent
 * @param {...(Child | Child[])} children
 */
export function fill (parent, ...children) {
  parent.replaceChildren()
  append(parent, children)
}
