import neostandard, { plugins } from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'data/**', 'node_modules/**'] }),
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
  }
]
