// A Storage that reports how long each operation takes (metrics.ts), around
// any backend. Listing every operation, rather than wrapping with a Proxy,
// lets the compiler say when the Storage interface grows one.
import { performance } from 'node:perf_hooks'
import type { Storage } from './storage.js'

export type ObserveQuery = (operation: string, seconds: number, failed: boolean) => void

export function timedStorage (storage: Storage, observe: ObserveQuery): Storage {
  const timed = <A extends unknown[], R>(operation: string, call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const start = performance.now()
      let failed = true
      try {
        const result = await call.apply(storage, args)
        failed = false
        return result
      } finally {
        observe(operation, (performance.now() - start) / 1000, failed)
      }
    }

  return {
    backend: storage.backend,
    createPet: timed('createPet', storage.createPet),
    createPetOnce: timed('createPetOnce', storage.createPetOnce),
    getPet: timed('getPet', storage.getPet),
    ...(storage.getPetJson === undefined ? {} : { getPetJson: timed('getPet', storage.getPetJson) }),
    listPets: timed('listPets', storage.listPets),
    // The same operation, however the page comes out.
    ...(storage.listPetsJson === undefined ? {} : { listPetsJson: timed('listPets', storage.listPetsJson) }),
    purgeIdempotentRequests: timed('purgeIdempotentRequests', storage.purgeIdempotentRequests),
    createApiKey: timed('createApiKey', storage.createApiKey),
    findApiKeyByTokenHash: timed('findApiKeyByTokenHash', storage.findApiKeyByTokenHash),
    findApiKeyByIssuedToken: timed('findApiKeyByIssuedToken', storage.findApiKeyByIssuedToken),
    getApiKey: timed('getApiKey', storage.getApiKey),
    listApiKeys: timed('listApiKeys', storage.listApiKeys),
    changeApiKey: timed('changeApiKey', storage.changeApiKey),
    listTokenHashes: timed('listTokenHashes', storage.listTokenHashes),
    countTokens: timed('countTokens', storage.countTokens),
    addUsage: timed('addUsage', storage.addUsage),
    usageOf: timed('usageOf', storage.usageOf),
    secret: timed('secret', storage.secret),
    ping: timed('ping', storage.ping),
    poolUse: () => storage.poolUse(),
    close: async () => { await storage.close() },
    searchApiKeys: timed('searchApiKeys', storage.searchApiKeys),
    usageTotals: timed('usageTotals', storage.usageTotals),
    busiestKeys: timed('busiestKeys', storage.busiestKeys),
    deprecatedCallers: timed('deprecatedCallers', storage.deprecatedCallers),
    countApiKeys: timed('countApiKeys', storage.countApiKeys),
    createWebhook: timed('createWebhook', storage.createWebhook),
    getWebhook: timed('getWebhook', storage.getWebhook),
    listWebhooks: timed('listWebhooks', storage.listWebhooks),
    changeWebhook: timed('changeWebhook', storage.changeWebhook),
    deleteWebhook: timed('deleteWebhook', storage.deleteWebhook),
    rollWebhookSecret: timed('rollWebhookSecret', storage.rollWebhookSecret),
    fanOutEvents: timed('fanOutEvents', storage.fanOutEvents),
    claimDeliveries: timed('claimDeliveries', storage.claimDeliveries),
    recordDeliveries: timed('recordDeliveries', storage.recordDeliveries),
    disableFailingEndpoints: timed('disableFailingEndpoints', storage.disableFailingEndpoints),
    listDeliveries: timed('listDeliveries', storage.listDeliveries),
    purgeEvents: timed('purgeEvents', storage.purgeEvents),
    announceOnce: timed('announceOnce', storage.announceOnce),
    keysToAnnounce: timed('keysToAnnounce', storage.keysToAnnounce),
    oldestUndeliveredEvent: timed('oldestUndeliveredEvent', storage.oldestUndeliveredEvent),
    resendDelivery: timed('resendDelivery', storage.resendDelivery),
    addEndpointEvent: timed('addEndpointEvent', storage.addEndpointEvent),
    addKeyLeak: timed('addKeyLeak', storage.addKeyLeak),
    firstKeyLeaks: timed('firstKeyLeaks', storage.firstKeyLeaks),
    countLeakedKeys: timed('countLeakedKeys', storage.countLeakedKeys)
  }
}
