#!/usr/bin/env node
// The `petstore` command runs the compiled sources (built by `npm install` and `npm start`).
import '../dist/src/cli/main.js'
