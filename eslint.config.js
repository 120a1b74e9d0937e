// The Fastify ecosystem's style (neostandard: standard for JavaScript and TypeScript), zero warnings allowed.
import neostandard, { resolveIgnoresFromGitignore } from 'neostandard'
import globals from 'globals'

export default [
  ...neostandard({ ts: true, ignores: [...resolveIgnoresFromGitignore(), '.scratch/**'] }),
  {
    rules: {
      // The APIs' own field names (min_lon, client_id) are snake_case: taking them apart keeps the names.
      camelcase: ['error', { properties: 'never', ignoreDestructuring: true, ignoreGlobals: true, allow: ['^(min|max)_(lon|lat)$', '^(client_id|redirect_uri|response_type)$'] }],
      // `void promise()` says a promise is left to run on purpose.
      'no-void': ['error', { allowAsStatement: true }]
    }
  },
  // The map page's own script runs in the browser.
  { files: ['public/**/*.js'], languageOptions: { globals: globals.browser } }
]
