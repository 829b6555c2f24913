// All of TypeBox the service uses, from one module that the build bundles
// into one file (scripts/bundle-typebox.js): TypeBox ships as some 680
// small modules, and loading them cost each process and worker thread about
// 0.6 s of CPU at start (docs/INTERNALS.md, section "Start-up"). Import
// TypeBox from here only; lint refuses it elsewhere.
export * from 'typebox'
export { Compile } from 'typebox/compile'
export { Value } from 'typebox/value'
