// The admin API as the console calls it: each call carries the admin token
// this tab keeps (session storage only), and a refusal becomes an Error
// with the Error body's message and status.
export const API = '/admin/v1'
const TOKEN_KEY = 'petstore-admin-token'

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY)
}

export async function api (method, path, body) {
  const headers = { authorization: `Bearer ${token.get()}` }
  if (body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(`${API}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await response.text()
  const json = text === '' ? undefined : JSON.parse(text)
  if (!response.ok) {
    const error = new Error(json?.message ?? `${response.status} ${response.statusText}`)
    error.status = response.status
    throw error
  }
  return { json, link: response.headers.get('link') }
}

/** The path, under the API, of the page a `Link: rel="next"` names; undefined on the last page. */
export function nextPath (link) {
  const next = /<([^>]+)>;\s*rel="next"/.exec(link ?? '')
  return next === null ? undefined : next[1].slice(API.length)
}
