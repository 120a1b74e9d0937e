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
  // Kysely and TypeBox load from their CommonJS builds, through db/kysely.ts and lib/typebox.ts: their ES
  // module builds are 500 files that Node 20's TypeScript loader would each carry across its thread.
  {
    files: ['**/*.ts'],
    ignores: ['db/kysely.ts', 'lib/typebox.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        paths: [
          { name: 'kysely', message: 'import Kysely\'s values from db/kysely.ts', allowTypeImports: true },
          ...['@sinclair/typebox', '@sinclair/typebox/value', '@fastify/type-provider-typebox'].map((name) => ({ name, message: 'import TypeBox\'s values from lib/typebox.ts', allowTypeImports: true }))
        ]
      }]
    }
  },
  // The map page's own script runs in the browser.
  { files: ['public/**/*.js'], languageOptions: { globals: globals.browser } }
]
