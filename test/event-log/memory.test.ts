import { createMemoryEventLog } from '../../src/event-log/index.ts'
import { eventLogContract, logOptions } from './contract.ts'

eventLogContract('memory', async () => {
  const log = createMemoryEventLog(logOptions)
  return { a: log, b: log, close: () => log.close() }
})
