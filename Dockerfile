# The service's image (docs/DEPLOYING.md).
#
#   docker build -t petstore .
#   docker run -p 8080:8080 -v petstore-data:/data petstore
#   docker run --rm -v petstore-data:/data petstore keys create --plan free
#
# With Podman: `podman build --format docker …`; an OCI image has no HEALTHCHECK.
#
# The base is a build argument so that the image can be built on a local
# base where no image registry is reachable (`npm run test:image` does).
# Node.js 24: better-sqlite3 13 needs 22 or later (docs/DEVELOPING.md: Node.js versions).
ARG NODE_IMAGE=node:24-bookworm-slim

# ---------------------------------------------------------------------------
# Compiles the service. Everything here stays behind: the compiler, the dev
# dependencies, npm's cache.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# The client library is a workspace: npm checks the lockfile against its
# package.json even when it is left out (--workspaces=false; the service
# does not use it).
COPY package.json package-lock.json ./
COPY client/package.json client/
# --ignore-scripts: the only install script the project allows is
# better-sqlite3's, and that is npm's default `node-gyp rebuild`, run
# because the package holds a binding.gyp. better-sqlite3 13 ships prebuilt
# binaries (prebuilds/) and loads them when nothing was compiled: its
# binding.gyp then builds nothing, but node-gyp still needs Python and make
# to find that out (and a C++ compiler where no prebuilt binary fits), none
# of which a slim image has. The 12.x copy for Node 20 (the optional
# dependency better-sqlite3-node20) would be compiled by the same script; it
# is not loaded on Node 22 and later and is left out of the runtime below.
RUN npm ci --ignore-scripts --workspaces=false --no-audit --no-fund --no-update-notifier
COPY tsconfig.json ./
COPY src src
COPY scripts/bundle-typebox.js scripts/
# The service's sources only (tests, benchmark and client are not in the
# build context), without source maps: dist/src is all that runs. TypeBox is
# then bundled into one module, as `npm run build` does (docs/INTERNALS.md,
# section "Start-up").
RUN echo '{ "extends": "./tsconfig.json", "include": ["src"] }' > tsconfig.image.json \
  && npx tsc -p tsconfig.image.json --sourceMap false \
  && node scripts/bundle-typebox.js

# ---------------------------------------------------------------------------
# The production dependencies, stripped of what is never loaded at run time.
FROM ${NODE_IMAGE} AS production-dependencies
WORKDIR /app
COPY package.json package-lock.json ./
COPY client/package.json client/
# --omit=optional drops better-sqlite3-node20 (loaded only on Node 20, and
# without a binary here: its install script does not run) and pg-cloudflare
# (loaded only on Cloudflare Workers). --ignore-scripts: as above.
RUN npm ci --omit=dev --omit=optional --ignore-scripts --workspaces=false --no-audit --no-fund --no-update-notifier \
  && npm cache clean --force \
  # better-sqlite3: its SQLite and C++ sources (deps/, src/, binding.gyp) and
  # any build leftovers serve only a compile, which did not happen; of its
  # prebuilt binaries, the one for this platform and libc is kept, found by
  # the driver's own lookup, and the others (macOS, Windows, musl, the other
  # architecture) are 2 MB each.
  && cd node_modules/better-sqlite3 \
  && keep="$(node -p "require('./lib/binding.js').getPrebuildPath()")" \
  && test -f "$keep" \
  && find "$PWD/prebuilds" -type f ! -path "$keep" -delete \
  && rm -rf deps src build binding.gyp \
  && cd /app \
  # Type declarations and TypeScript sources: Node never loads .ts files from
  # node_modules. Source maps: the service does not enable them (no
  # --enable-source-maps). Markdown: READMEs, changelogs. Licence files stay.
  && find node_modules -type f \( -name '*.ts' -o -name '*.mts' -o -name '*.cts' -o -name '*.map' \
    -o \( -iname '*.md' ! -iname 'licen?e*' \) \) -delete \
  # The driver still loads from what is left.
  && node -e "new (require('better-sqlite3'))(':memory:').prepare('select 1').get()"

# ---------------------------------------------------------------------------
# The runtime: Node.js, the production dependencies, dist/src, bin/ and
# package.json (whose version `petstore --version` prints). Owned by root and
# so read-only to the user the service runs as.
FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATABASE_URL=sqlite:/data/petstore.db
WORKDIR /app
COPY package.json ./
COPY bin bin
COPY --from=production-dependencies /app/node_modules node_modules
COPY --from=build /app/dist/src dist/src
# The operator console's page and scripts, served as they are (src/routes/console.ts).
COPY console console
# The SQLite database lives in the volume, which a new named volume copies
# this folder's owner from: the service's user must be able to write there.
RUN mkdir /data && chown node:node /data
VOLUME /data
# The official image's unprivileged user (uid 1000).
USER node
EXPOSE 8080
# `npm start`'s node options (package.json): Node.js 24's larger young
# generation would add some 30 MiB under load (docs/OPERATING.md, "Memory").
# `-e NODE_OPTIONS=…` replaces them.
ENV NODE_OPTIONS="--max-semi-space-size=8"
# node, not curl: slim and distroless images have no curl. PORT as the
# container was given it, so that the check follows `-e PORT=…`.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Node runs as PID 1, with no init: the kernel gives PID 1 no default action
# for SIGTERM or SIGINT, but the service handles both itself (it finishes the
# requests in flight, closes its stores and exits 0; docs/OPERATING.md), and
# it starts no child processes, so there are no orphans to reap. An init
# (`docker run --init`) is not needed; `npm run test:image` checks the stop.
ENTRYPOINT ["node", "bin/petstore.js"]
CMD ["serve"]
