import { builtinModules } from 'node:module'
import neostandard, { plugins } from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'data/**', 'node_modules/**', 'client/dist/**', 'client/src/generated/**'] }),
  {
    files: ['**/*.ts'],
    plugins: { '@typescript-eslint': plugins['typescript-eslint'].plugin },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error'
    }
  },
  {
    // TypeBox's idiom: a schema and its static type share one name.
    files: ['src/schemas/**/*.ts'],
    rules: { '@typescript-eslint/no-redeclare': 'off' }
  },
  {
    // TypeBox is loaded from one bundled module (src/schemas/typebox.ts says why).
    files: ['src/**/*.ts', 'test/**/*.ts'],
    ignores: ['src/schemas/typebox.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['typebox', 'typebox/*'], message: 'Import TypeBox from src/schemas/typebox.ts: it is bundled into one file.' }] }]
    }
  },
  {
    // The client library runs in browsers too: web-standard APIs only.
    files: ['client/src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['node:*', ...builtinModules], message: 'The client runs in browsers too: use web-standard APIs.' }] }],
      'no-restricted-globals': ['error', 'process', 'Buffer', 'global', 'require', '__dirname', '__filename', 'setImmediate']
    }
  }
]
