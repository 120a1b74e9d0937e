// Where a browser sign-in goes on to when it was given no usable return path.
export const DEFAULT_RETURN_PATH = '/dashboard'

// Longer return paths are refused: the path travels in a cookie.
export const MAX_RETURN_PATH = 2048

// What a path and query of this origin are written with (RFC 3986 pchar, `/`, `?` and percent-escapes),
// plus the characters browsers leave unescaped in a query; no space, backslash, `#` or control character.
const PRINTABLE = /^[\x21-\x7e]+$/
const FORBIDDEN = /[\\#"<>]/
const BAD_ESCAPE = /%(?![0-9a-f]{2})/i
// Escapes decoded this many times at most: a path escaped more deeply than that is refused.
const MAX_DECODINGS = 4

// A decoded path that a browser or a proxy could read as another origin or another place.
function unsafePath (path: string): boolean {
  if (path.startsWith('//') || path.startsWith('/\\')) return true
  // eslint-disable-next-line no-control-regex
  if (/[\\\x00-\x1f\x7f]/.test(path)) return true
  return path.split('/').some((segment) => segment === '.' || segment === '..')
}

/**
 * The same-origin path and query a sign-in may return to, or DEFAULT_RETURN_PATH. Accepted: a path
 * starting with one `/`, in printable ASCII, whose path part, decoded as often as it is escaped, still
 * starts with one `/` and holds no backslash, control character or dot segment. Everything else
 * (absolute and scheme-relative URLs, `/\host`, escaped slashes such as `/%2F%2Fhost`) is refused.
 */
export function returnPath (value: unknown): string {
  if (typeof value !== 'string' || value.length > MAX_RETURN_PATH) return DEFAULT_RETURN_PATH
  if (!value.startsWith('/') || !PRINTABLE.test(value) || FORBIDDEN.test(value) || BAD_ESCAPE.test(value)) return DEFAULT_RETURN_PATH
  let path = value.split('?')[0]!
  for (let i = 0; i <= MAX_DECODINGS; i++) {
    if (unsafePath(path)) return DEFAULT_RETURN_PATH
    if (!path.includes('%')) return value
    if (i === MAX_DECODINGS) break
    try {
      path = decodeURIComponent(path)
    } catch {
      return DEFAULT_RETURN_PATH
    }
  }
  return DEFAULT_RETURN_PATH
}
