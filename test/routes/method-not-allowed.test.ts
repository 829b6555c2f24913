// The 405 routes are made from the routes of their scope, collected as they
// are added: no list of paths is kept by hand.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import Fastify from 'fastify'
import methodNotAllowedRoutes, { collectPaths } from '../../src/routes/method-not-allowed.js'

describe('405 routes', () => {
  it('When a scope has routes of its own, then each of their paths answers 405 with Allow for the other methods, with no list of paths given', async () => {
    // Arrange: two paths, one of them with a parameter, under a prefix.
    const app = Fastify()
    await app.register(async (api) => {
      const paths = collectPaths(api)
      api.get('/things', async () => [])
      api.post('/things', async () => ({}))
      api.get('/things/:id', async () => ({}))
      await api.register(methodNotAllowedRoutes, { paths })
    }, { prefix: '/v9' })
    await app.ready()

    // Act
    const list = await app.inject({ method: 'DELETE', url: '/v9/things' })
    const one = await app.inject({ method: 'PUT', url: '/v9/things/3' })
    const other = await app.inject({ method: 'DELETE', url: '/v9/nothing' })

    // Assert
    assert.equal(list.statusCode, 405)
    assert.equal(list.headers.allow, 'GET, HEAD, POST')
    assert.equal(one.statusCode, 405)
    assert.equal(one.headers.allow, 'GET, HEAD')
    assert.equal(other.statusCode, 404)
    await app.close()
  })
})
