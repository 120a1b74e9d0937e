/*
 * A placemark's popup: its name, folders, KML time (in the dataset's zone, the UTC instant on hover),
 * its description sanitised by DOMPurify (no scripts, styles or images: the page's policy refuses them
 * and the page must work offline; a description's images are listed as links instead), its media
 * links and links to its JSON and GeoJSON.
 */

/**
 * @typedef {{ id: number, name: string, description: string | null, folder_path: string[], geometry_type: string,
 *   media_links: string[], time_begin: string | null, time_end: string | null }} Placemark
 * @typedef {typeof import('dompurify').default} Purifier
 * @typedef {(iso: string) => HTMLTimeElement} TimeElement
 */

const SANITIZE = {
  FORBID_TAGS: ['img', 'style', 'video', 'audio', 'source', 'picture', 'iframe', 'form', 'input', 'button', 'textarea', 'select', 'svg', 'math'],
  FORBID_ATTR: ['style'],
  // Nor data-* attributes: nothing reads them, and the inert handlers below are renamed to them.
  ALLOW_DATA_ATTR: false
}

// A start tag, its quoted attribute values (which may hold `>`) included.
const START_TAG = /<[a-z][^>"']*(?:(?:"[^"]*"|'[^']*')[^>"']*)*>/gi
// In a start tag: a quoted value (kept as it is), or an attribute name starting with `on`.
const HANDLER = /("[^"]*"|'[^']*')|([\s/])on(?=[a-z])/gi

/**
 * The markup with its inline event handlers (`onclick=`, `onerror=`) renamed to inert data attributes,
 * before anything parses it: Chromium reports each one it parses as a violation of the page's policy
 * (`script-src-attr 'none'`) on the console, even in an inert document where nothing would run it.
 * Not the sanitising itself (DOMPurify's, after it), only the quiet parse before it.
 * @param {string} html
 */
export const withoutHandlers = (html) =>
  html.replace(START_TAG, (tag) => tag.replace(HANDLER, (match, quoted, before) => quoted ?? `${before}data-inert-on`))

/**
 * DOMPurify with the page's rules: links open in a new tab, without the page as their opener.
 * @param {Purifier} purifier
 */
export function configurePurifier (purifier) {
  purifier.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A') {
      node.setAttribute('target', '_blank')
      node.setAttribute('rel', 'noopener noreferrer')
    }
  })
}

/**
 * @param {Purifier} purifier
 * @param {string} html
 */
export const sanitize = (purifier, html) => purifier.sanitize(withoutHandlers(html), SANITIZE)

/**
 * @param {string} tag
 * @param {string | null} [className]
 * @param {string} [text]
 */
function el (tag, className, text) {
  const node = document.createElement(tag)
  if (className) node.className = className
  if (text !== undefined) node.textContent = text
  return node
}

/**
 * @param {string} href
 * @param {string} text
 */
function link (href, text) {
  const a = /** @type {HTMLAnchorElement} */ (el('a', null, text))
  a.href = href
  return a
}

/**
 * The popup's content for a placemark.
 * @param {Placemark} p
 * @param {{ purifier: Purifier, timeElement: TimeElement }} tools
 * @returns {HTMLElement}
 */
export function popupContent (p, { purifier, timeElement }) {
  const root = el('div', 'popup')
  const title = el('h2', null, p.name || '(no name)')
  title.id = `popup-title-${p.id}`
  root.append(title)
  if (p.folder_path.length) root.append(el('p', 'folder-path', p.folder_path.join(' › ')))
  if (p.time_begin || p.time_end) {
    const when = el('p', 'when')
    if (p.time_begin) when.append(timeElement(p.time_begin))
    if (p.time_begin !== p.time_end) {
      when.append(' – ')
      if (p.time_end) when.append(timeElement(p.time_end))
      else when.append('open end')
    }
    root.append(when)
  }
  const images = []
  if (p.description) {
    // An inert document (nothing loads in it) tells which images the description names.
    const parsed = new DOMParser().parseFromString(withoutHandlers(p.description), 'text/html')
    for (const img of parsed.querySelectorAll('img[src]')) images.push(img.getAttribute('src') ?? '')
    const description = el('div', 'description')
    description.innerHTML = sanitize(purifier, p.description)
    root.append(description)
  }
  const links = [...p.media_links, ...images].filter((href) => /^https?:\/\//i.test(href))
  if (links.length) {
    const list = el('ul', 'media')
    for (const href of links) {
      const a = link(href, href)
      a.target = '_blank'
      a.rel = 'noopener noreferrer'
      const item = el('li')
      item.append(a)
      list.append(item)
    }
    root.append(list)
  }
  const more = el('p', 'links')
  more.append(link(`/api/v1/placemarks/${p.id}`, 'JSON'), ' · ', link(`/api/v1/placemarks/${p.id}?format=geojson`, 'GeoJSON'))
  root.append(more)
  return root
}
