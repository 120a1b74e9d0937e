import { readFileSync } from 'node:fs'

// One answer a peer serves: the exact bytes and content-type our server gave for the URL.
export interface Answer { url: string; contentType: string; body: Buffer }

// Reads the peer's answers file: a JSON array of {url, contentType, bodyBase64}.
export function readAnswers (file: string): Answer[] {
  const entries = JSON.parse(readFileSync(file, 'utf8')) as { url: string; contentType: string; bodyBase64: string }[]
  return entries.map((e) => ({ url: e.url, contentType: e.contentType, body: Buffer.from(e.bodyBase64, 'base64') }))
}

// The answers grouped by path: the framework routes on the path, the query picks the answer.
export function byPath (answers: Answer[]): Map<string, Map<string, Answer>> {
  const paths = new Map<string, Map<string, Answer>>()
  for (const answer of answers) {
    const path = new URL(answer.url, 'http://x').pathname
    if (!paths.has(path)) paths.set(path, new Map())
    paths.get(path)!.set(answer.url, answer)
  }
  return paths
}
