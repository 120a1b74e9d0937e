import type { RouteOptions } from 'fastify'

type HookName = 'onRequest' | 'onSend'

/**
 * Adds a route-level hook from an onRoute hook, before or after the route's own (a route's hooks may
 * be one function, a list, or none).
 */
export function addRouteHook(route: RouteOptions, name: HookName, hook: unknown, where: 'first' | 'last'): void {
  const current = route[name] as unknown
  const list = current === undefined ? [] : Array.isArray(current) ? current : [current]
  ;(route as Record<HookName, unknown>)[name] = where === 'first' ? [hook, ...list] : [...list, hook]
}
