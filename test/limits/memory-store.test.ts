import { MemoryStore } from '../../src/limits/memory-store.js'
import { inProcessStoreSuite } from './in-process-store-suite.js'
import { rateLimitStoreContract } from './store-contract.js'

rateLimitStoreContract('memory', async () => new MemoryStore())
inProcessStoreSuite('in-process', (clock, maxSubjects) => new MemoryStore(clock, maxSubjects === undefined ? {} : { maxSubjects }))
