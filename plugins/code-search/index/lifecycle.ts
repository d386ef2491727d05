/**
 * Each organisation's index through its life: loaded from its snapshot on first use, changed, saved, compacted,
 * replaced by a newer snapshot another process saved, its term space learnt, and closed.
 *
 * Indexes are saved when an import ends (indexFiles answers once its changes are in a snapshot), at least every
 * five snapshot delays while a long import runs, and one snapshot delay after other changes (see persistence.ts).
 * Every change is also kept in a list until a snapshot holds it, so when another process sharing the database has
 * saved a newer snapshot, this process loads that one and applies its own unsaved changes on top: changes to
 * different files of one organisation made in two processes both survive; for the same file, the later save wins.
 * With a memory budget, the least recently used whole indexes are dropped (saved first) and loaded again on next use.
 */
import type { Logger } from '../../../src/log.ts'
import type { EmbeddingProvider } from '../embeddings/index.ts'
import { timeSlices } from '../../../src/time-slices.ts'
import { INDEX_SLICE_MS, SWEEP_DELAY_MS, TERM_SPACE_BATCH_CHARS } from '../tuning.ts'
import { termSpaceLearner } from '../vectors/index.ts'
import { applyChange, decodeChanges, encodeChange, type Change } from './changes.ts'
import type { OrgIndex } from './org-index.ts'
import {
  decodeSnapshotData,
  decodeSnapshotHeader,
  decodeSnapshotTail,
  encodeSegment,
  loadOrgIndexModule,
  orgIndexModule,
  restoreSnapshot,
  type SnapshotLayout,
  type SnapshotStore,
  type SnapshotVersion,
} from './persistence.ts'

/** An organisation's index holding nothing yet; Orama is loaded by then (IndexLifecycle.load). */
function emptyIndex(): OrgIndex {
  const { OrgIndex } = orgIndexModule()
  return new OrgIndex()
}

export interface IndexLifecycleOptions {
  embeddings: Pick<EmbeddingProvider, 'id' | 'hashedDimensions'>
  /** Where indexes are saved; without one they live in memory only. */
  snapshots: SnapshotStore | undefined
  logger: Logger
  now: () => number
  /** Quiet time after a change before the index is saved. */
  snapshotDelayMs: number
  /** How often a search checks the database for a newer snapshot; 0 checks every time. */
  refreshIntervalMs: number
  /** Bytes of segments beyond which a Worker rewrites a snapshot as one base (also beyond half the base). */
  compactAfterBytes: number
  /**
   * Bytes of indexes this process keeps, each counted as its snapshot plus its unsaved changes; beyond it the
   * least recently used whole indexes are dropped (saved first), to be loaded again on next use. 0: no limit.
   */
  memoryBudgetBytes?: number
  /** Told of each snapshot version this process commits, so other processes can adopt it at once. */
  onCommitted?: (orgId: string, version: number) => void
  /** Told of each index dropped to stay within the memory budget. */
  onEvicted?: (orgId: string) => void
}

interface Loaded {
  index: OrgIndex
  /** The snapshot version `index` was loaded from or saved as; 0 before the first. */
  version: number
  /** That version's file, which the next save appends to; undefined while the index holds nothing saved. */
  file: string | undefined
  layout: SnapshotLayout | undefined
}

export interface OrgState extends Loaded {
  readonly orgId: string
  /**
   * Changes applied to `index` and not yet in a saved snapshot, encoded as a segment holds them: decoded again
   * only when they must be applied on top of a newer snapshot, so a long import keeps no second copy of its
   * chunks and vectors.
   */
  pending: Uint8Array[]
  compacting: boolean
  pendingSince: number | undefined
  checkedAt: number
  timer: ReturnType<typeof setTimeout> | undefined
  /** Saves asked for and not yet done: the timer adds none while one is, which saves what is pending anyway. */
  savesInFlight: number
  /** Refreshes and saves run one at a time. */
  queue: Promise<unknown>
  refreshing: Promise<void> | undefined
  /** The term space being learnt, and whether to look again when it is: the index changed meanwhile. */
  learning: Promise<void> | undefined
  learnAgain: boolean
  /** A sweep of removed chunks' postings, waiting for changes to pause (sweepLater) or under way (sweep). */
  sweepTimer: ReturnType<typeof setTimeout> | undefined
  sweeping: Promise<void> | undefined
  /** Set once the organisation was deleted: nothing is applied or saved any more. */
  removed?: boolean
}

const fileBytes = (layout: SnapshotLayout) => 8 + layout.baseBytes + layout.segmentBytes
/** What an index is counted as against the memory budget: its snapshot, and its changes not in it yet. */
const heldBytes = (org: OrgState) => (org.layout ? fileBytes(org.layout) : 0) + org.pending.reduce((sum, change) => sum + change.length, 0)

export class IndexLifecycle {
  private readonly states = new Map<string, Promise<OrgState>>()
  /** Loaded indexes, least recently used first. */
  private readonly resident = new Map<string, OrgState>()
  /** Indexes being changed (an import, a removal), which are never dropped meanwhile. */
  private readonly holds = new Map<string, number>()
  private isClosed = false
  private readonly closing = new AbortController()
  /** Organisations whose snapshot is being decoded on the Worker: a load long enough not to keep a search waiting. */
  private readonly decodingAside = new Set<string>()
  /** Organisations whose compacted snapshot is being claimed: a save of this process, as far as a search is concerned. */
  private readonly claiming = new WeakSet<OrgState>()

  constructor(private readonly options: IndexLifecycleOptions) {}

  get closed(): boolean {
    return this.isClosed
  }

  /** Whether indexes are saved: a snapshot store is configured, and changes are kept encoded for it. */
  get savesSnapshots(): boolean {
    return this.options.snapshots !== undefined
  }

  /** The organisation's index and its state, loaded from its snapshot on first use. */
  org(orgId: string): Promise<OrgState> {
    let pending = this.states.get(orgId)
    if (!pending) {
      const loading = this.load(orgId)
      pending = loading
      void loading.then(
        (org) => {
          if (this.states.get(orgId) === loading) this.used(org)
          this.learnMeaning(org)
          // A snapshot's segments may remove chunks.
          this.sweepLater(org)
        },
        () => undefined,
      )
      // A failed load is tried again by the next caller rather than remembered.
      loading.catch(() => this.states.get(orgId) === loading && this.states.delete(orgId))
      this.states.set(orgId, pending)
    } else {
      const org = this.resident.get(orgId)
      if (org) this.used(org)
    }
    return pending
  }

  /**
   * Whether the organisation's index can be searched now: `ready` (loaded, or nothing to load), `loading` (its
   * snapshot is being decoded on the Worker and did not end within `waitMs`; the load goes on), or `unavailable`
   * (its snapshot could not be read or decoded; the next call tries again). A snapshot small enough to be decoded
   * on the event loop is waited for: it takes less time than asking again would.
   */
  async readiness(orgId: string, waitMs: number): Promise<'ready' | 'loading' | 'unavailable'> {
    if (this.resident.has(orgId)) return 'ready'
    const loading = this.org(orgId).then(
      () => 'ready' as const,
      () => 'unavailable' as const,
    )
    let timer: ReturnType<typeof setTimeout> | undefined
    const waited = new Promise<'loading'>((resolve) => {
      const check = () => (this.decodingAside.has(orgId) ? resolve('loading') : (timer = setTimeout(check, Math.max(waitMs, 10))))
      timer = setTimeout(check, waitMs)
    })
    try {
      return await Promise.race([loading, waited])
    } finally {
      clearTimeout(timer)
    }
  }

  /** Runs `work` while keeping the organisation's index from being dropped. */
  async holding<T>(orgId: string, work: () => Promise<T>): Promise<T> {
    this.holds.set(orgId, (this.holds.get(orgId) ?? 0) + 1)
    try {
      return await work()
    } finally {
      const left = this.holds.get(orgId)! - 1
      if (left > 0) this.holds.set(orgId, left)
      else this.holds.delete(orgId)
    }
  }

  /** Another process committed `version`: an index held here adopts it now rather than at its next check. */
  async committedElsewhere(orgId: string, version: number): Promise<void> {
    const org = this.resident.get(orgId)
    if (!org || org.version >= version) return
    await this.refresh(org, true)
  }

  /** Drops the organisation's index from this process, its unsaved changes saved first; the next use loads it again. */
  async drop(orgId: string): Promise<boolean> {
    const org = this.resident.get(orgId)
    if (!org || this.holds.has(orgId)) return false
    if (org.pending.length > 0) await this.save(org).catch(() => undefined)
    await org.queue
    // Changed or taken up again meanwhile: kept.
    if (org.pending.length > 0 || org.savesInFlight > 0 || this.holds.has(orgId) || this.resident.get(orgId) !== org) return false
    clearTimeout(org.timer)
    clearTimeout(org.sweepTimer)
    this.resident.delete(orgId)
    this.states.delete(orgId)
    return true
  }

  /** Marks the index as just used and drops the least recently used others while the budget is exceeded. */
  private used(org: OrgState): void {
    this.resident.delete(org.orgId)
    this.resident.set(org.orgId, org)
    const budget = this.options.memoryBudgetBytes ?? 0
    if (budget <= 0 || this.isClosed) return
    let total = 0
    for (const held of this.resident.values()) total += heldBytes(held)
    for (const [orgId, held] of this.resident) {
      if (total <= budget) break
      if (held === org || this.holds.has(orgId)) continue
      total -= heldBytes(held)
      void this.drop(orgId).then(
        (dropped) => {
          if (!dropped) return
          this.options.logger.info('code index dropped to stay within the memory budget', { orgId, budgetBytes: budget })
          this.options.onEvicted?.(orgId)
        },
        () => undefined,
      )
    }
  }

  /** Resolves once the organisation's term space is learnt from what its index holds now, or found unneeded. */
  async meaningLearnt(orgId: string): Promise<void> {
    const org = await this.org(orgId)
    while (org.learning) await org.learning
  }

  /** Loads a newer snapshot if the database names one; `always` skips the refresh interval. */
  refresh(org: OrgState, always: boolean): Promise<void> {
    const { snapshots, now, refreshIntervalMs } = this.options
    if (!snapshots || (!always && now() - org.checkedAt < refreshIntervalMs)) return Promise.resolve()
    // Stamped first: while the database is unreachable, searches do not all wait on it.
    org.checkedAt = now()
    // Queued behind this process's own save or compaction, which can take seconds on a busy disk: a search answers
    // meanwhile from the index, which already holds what is being saved, and the check runs when its turn comes.
    const behindOwnWrite = org.savesInFlight > 0 || this.claiming.has(org)
    org.refreshing ??= this.serially(org, async () => {
      const named = await snapshots.current(org.orgId)
      if (named && named.version > org.version) await this.adopt(org, named)
      // Saved once and named no more: another process deleted the organisation, so what is held here goes too.
      else if (!named && org.version > 0 && org.pending.length === 0) this.forget(org)
    }).finally(() => (org.refreshing = undefined))
    if (!always && behindOwnWrite) {
      org.refreshing.catch((error) => this.options.logger.warn('code index version check failed', { orgId: org.orgId, err: error }))
      return Promise.resolve()
    }
    return org.refreshing
  }

  /**
   * Deletes the organisation's index: here at once, its snapshots and version record in the store; other processes
   * drop their copy when they next look at it (refresh). Changes still being applied to it are dropped.
   */
  async removeOrganisation(orgId: string): Promise<void> {
    const org = await this.states.get(orgId)?.catch(() => undefined)
    if (org) {
      org.removed = true
      this.forget(org)
      await org.queue
    }
    await this.options.snapshots?.remove?.(orgId)
    // The next use loads afresh, from a store that names nothing.
    this.states.delete(orgId)
    this.resident.delete(orgId)
  }

  private forget(org: OrgState): void {
    clearTimeout(org.timer)
    Object.assign(org, { index: emptyIndex(), version: 0, file: undefined, layout: undefined, pending: [], pendingSince: undefined })
  }

  /** Applies the change to the index and, with a snapshot store, keeps it encoded until a save holds it. */
  apply(org: OrgState, change: Change): void {
    if (org.removed) return
    applyChange(org.index, change)
    this.sweepLater(org)
    if (!this.options.snapshots) return
    org.pending.push(encodeChange(change))
    org.pendingSince ??= this.options.now()
    this.scheduleSave(org)
  }

  /**
   * Sweeps the removed chunks' entries out of the index's postings once changes have paused for SWEEP_DELAY_MS:
   * reads skip them meanwhile, and sweeping once after a run of removals scans each list once, not once a change.
   */
  private sweepLater(org: OrgState): void {
    if (this.isClosed || !org.index.sweepPending) return
    clearTimeout(org.sweepTimer)
    org.sweepTimer = setTimeout(() => {
      this.sweep(org).catch((error) => this.options.logger.warn('code index sweep failed', { orgId: org.orgId, err: error }))
    }, SWEEP_DELAY_MS)
    org.sweepTimer.unref?.()
  }

  /**
   * Sweeps the removed chunks' entries out of the index's postings now, between other work (`giveWay`, see
   * time-slices.ts); resolves once none is left, or the lifecycle is closed. One sweep runs at a time.
   */
  async sweep(org: OrgState, giveWay = timeSlices(INDEX_SLICE_MS)): Promise<void> {
    clearTimeout(org.sweepTimer)
    org.sweepTimer = undefined
    while (org.sweeping) await org.sweeping
    if (this.isClosed || !org.index.sweepPending) return
    const run = (async () => {
      // The index may be replaced by a newer snapshot meanwhile: that one is swept in its turn.
      for (let index = org.index; index.sweepPending && !this.isClosed; index = org.index)
        for (const _ of index.sweepRemoved()) {
          await giveWay()
          if (this.isClosed || org.index !== index) break
        }
    })()
    org.sweeping = run
    try {
      await run
    } finally {
      org.sweeping = undefined
    }
  }

  /** Saves the pending changes now; on failure they stay pending and a retry is scheduled. */
  save(org: OrgState): Promise<void> {
    const { logger, snapshotDelayMs } = this.options
    clearTimeout(org.timer)
    org.timer = undefined
    org.savesInFlight++
    const saving = this.serially(org, () => this.commitPending(org))
    saving.then(
      () => org.savesInFlight--,
      () => org.savesInFlight--,
    )
    return saving.catch((error) => {
      logger.error('code index snapshot failed; will retry', { orgId: org.orgId, err: error })
      this.scheduleSave(org, Math.max(snapshotDelayMs, 1000) * 5)
      throw error
    })
  }

  /**
   * Learns the organisation's term space on the learner's Worker when the index has none or has changed since
   * (OrgIndex.meaningStale): after each import, one at a time, changes made meanwhile leading to one more. With
   * offline embeddings only, since a model's own vectors carry meaning.
   */
  learnMeaning(org: OrgState): void {
    const { embeddings, logger } = this.options
    if (embeddings.hashedDimensions === undefined || this.isClosed) return
    if (org.learning) {
      org.learnAgain = true
      return
    }
    const index = org.index
    if (!index.meaningStale) return
    org.learning = termSpaceLearner()
      .learn(index.meaningSource(TERM_SPACE_BATCH_CHARS), this.closing.signal)
      .then(
        (learnt) => {
          // A newer snapshot replaced the index meanwhile: it learns its own.
          if (org.index === index) index.adoptMeaning(learnt)
          logger.debug('code index term space learnt', { orgId: org.orgId, chunks: index.chunkCount, terms: learnt?.terms ?? 0 })
        },
        (error) => {
          index.abandonMeaning()
          if (!this.isClosed) logger.warn('code index term space not learnt; vector search uses the embeddings alone', { orgId: org.orgId, err: error })
        },
      )
      .finally(() => {
        org.learning = undefined
        if (org.learnAgain || org.index !== index) {
          org.learnAgain = false
          this.learnMeaning(org)
        }
      })
  }

  /** Takes no more changes, saves what is pending and waits for every save under way. */
  async close(): Promise<void> {
    if (this.isClosed) return
    this.isClosed = true
    const { snapshots } = this.options
    // A closed index takes no more changes: a space still being learnt for it would go unused.
    this.closing.abort(new Error('the code index is closed'))
    const orgs = await Promise.allSettled([...this.states.values()])
    for (const result of orgs) {
      if (result.status !== 'fulfilled') continue
      const org = result.value
      clearTimeout(org.timer)
      clearTimeout(org.sweepTimer)
      if (snapshots && org.pending.length > 0) await this.save(org).catch(() => undefined)
      await org.queue
    }
    snapshots?.close?.()
  }

  private async load(orgId: string): Promise<OrgState> {
    const { snapshots, logger, now } = this.options
    // Imported, not required when first needed: a require would take the whole of Orama's loading in one turn. Not
    // waited for before the snapshot's decode starts on the Worker, which needs none of it: a search arriving
    // meanwhile is answered partial once the decode is under way, however long the import takes.
    const indexModule = loadOrgIndexModule()
    indexModule.catch(() => undefined)
    const named = await snapshots?.current(orgId)
    let loaded: Loaded
    if (named) loaded = await this.loadSnapshot(orgId, named, indexModule)
    else {
      await indexModule
      loaded = { version: 0, file: undefined, layout: undefined, index: emptyIndex() }
    }
    if (named) logger.info('code index loaded', { orgId, version: loaded.version, chunks: loaded.index.chunkCount })
    return {
      orgId,
      ...loaded,
      pending: [],
      compacting: false,
      savesInFlight: 0,
      pendingSince: undefined,
      checkedAt: now(),
      timer: undefined,
      queue: Promise.resolve(),
      refreshing: undefined,
      learning: undefined,
      learnAgain: false,
      sweepTimer: undefined,
      sweeping: undefined,
    } satisfies OrgState
  }

  /**
   * The snapshot the database names, read and decoded; a file pruned while we looked is looked up again. The index
   * is built once `indexModule` (the index's code, still being imported at a first load) is there.
   */
  private async loadSnapshot(orgId: string, named: SnapshotVersion, indexModule: Promise<unknown> = Promise.resolve()): Promise<Loaded> {
    const { snapshots, embeddings, logger } = this.options
    let snapshot = named
    for (let attempt = 1; ; attempt++) {
      try {
        // Read, decompressed and parsed on the snapshot Worker where the store has one: only the restore runs here.
        const decoded = snapshots!.decode
          ? await snapshots!.decode(orgId, snapshot, () => this.decodingAside.add(orgId)).finally(() => this.decodingAside.delete(orgId))
          : decodeSnapshotData(await snapshots!.read(orgId, snapshot))
        await indexModule
        const { header, layout } = decoded
        if (header.embeddings !== embeddings.id) {
          logger.warn('code index snapshot made with other embeddings; starting empty, re-import the repositories', {
            orgId,
            snapshot: header.embeddings,
            configured: embeddings.id,
          })
          // No file to append to: the next save writes a whole one.
          return { version: snapshot.version, file: undefined, layout: undefined, index: emptyIndex() }
        }
        return { version: snapshot.version, file: snapshot.file, layout, index: await restoreSnapshot(decoded) }
      } catch (error) {
        const missing = (error as NodeJS.ErrnoException).code === 'ENOENT'
        const newer = missing ? await snapshots!.current(orgId) : undefined
        if (!missing || !newer || attempt >= 3) throw error
        snapshot = newer
      }
    }
  }

  private serially<T>(org: OrgState, task: () => Promise<T>): Promise<T> {
    const run = org.queue.then(task, task)
    org.queue = run.catch(() => undefined)
    return run
  }

  /** Replaces the index with the newer snapshot `named`, with this process's unsaved changes on top. */
  private async adopt(org: OrgState, named: SnapshotVersion): Promise<void> {
    if (await this.adoptTail(org, named)) return
    const loaded = await this.loadSnapshot(org.orgId, named)
    this.applyPending(org, loaded.index)
    Object.assign(org, loaded)
    this.learnMeaning(org)
    this.sweepLater(org)
    this.options.logger.info('code index reloaded: another process saved a newer snapshot', { orgId: org.orgId, version: loaded.version })
  }

  /**
   * When the newer snapshot is ours with segments appended, applies only those (and our unsaved changes
   * again on top): the cost of what changed, not of decoding the whole index. False when it must be read whole.
   */
  private async adoptTail(org: OrgState, named: SnapshotVersion): Promise<boolean> {
    const { snapshots, embeddings, logger } = this.options
    if (!org.layout) return false
    const tail = await snapshots!
      .read(org.orgId, named)
      .then((bytes) => decodeSnapshotTail(bytes, org.layout!))
      .catch(() => undefined)
    if (!tail || tail.header.embeddings !== embeddings.id) return false
    for (const change of tail.changes) applyChange(org.index, change)
    this.applyPending(org, org.index)
    Object.assign(org, { version: named.version, file: named.file, layout: tail.layout })
    this.learnMeaning(org)
    this.sweepLater(org)
    logger.info('code index reloaded: another process saved a newer snapshot', { orgId: org.orgId, version: named.version, changes: tail.changes.length })
    return true
  }

  /** This process's unsaved changes, applied to `index` (a newer snapshot just loaded). */
  private applyPending(org: OrgState, index: OrgIndex): void {
    for (const encoded of org.pending) for (const change of decodeChanges(encoded)) applyChange(index, change)
  }

  private scheduleSave(org: OrgState, delayMs = this.options.snapshotDelayMs): void {
    const { now, snapshotDelayMs } = this.options
    if (this.isClosed) return
    clearTimeout(org.timer)
    // Debounced, but a long import still saves at least every five delays.
    const overdue = org.pendingSince !== undefined && now() - org.pendingSince >= 5 * snapshotDelayMs
    org.timer = setTimeout(() => org.savesInFlight === 0 && void this.save(org).catch(() => undefined), overdue ? 0 : delayMs)
    org.timer.unref?.()
  }

  /** Commits the pending changes as the next version's segment; when another process saved first, builds on its snapshot. */
  private async commitPending(org: OrgState): Promise<void> {
    const { snapshots, embeddings, logger, now } = this.options
    for (let attempt = 1; org.pending.length > 0 && !org.removed; attempt++) {
      const saved = org.pending.length
      const vectors = org.index.vectors
      const chain = org.layout?.chain ?? crypto.randomUUID()
      const header = {
        orgId: org.orgId,
        version: org.version + 1,
        embeddings: embeddings.id,
        dimensions: vectors?.dimensions ?? 0,
        slots: vectors?.slots ?? 0,
        chunks: org.index.chunkCount,
        savedAt: now(),
        chain,
      }
      // Only the changes since the last save, already encoded; appended to that save's file.
      const fresh = org.file === undefined
      const pieces = encodeSegment(org.pending.slice(0, saved), header, fresh)
      const bytes = pieces.reduce((sum, piece) => sum + piece.length, 0)
      const claimed = await snapshots!.commit(org.orgId, org.version, pieces, org.file)
      if (claimed) {
        const layout = org.layout ?? { chain, sections: 0, baseBytes: 0, segmentBytes: fresh ? -8 : 0 }
        Object.assign(org, { ...claimed, layout: { ...layout, sections: layout.sections + 1, segmentBytes: layout.segmentBytes + bytes } })
        org.pending.splice(0, saved)
        org.pendingSince = org.pending.length > 0 ? now() : undefined
        logger.debug('code index saved', { orgId: org.orgId, version: org.version, chunks: org.index.chunkCount, bytes })
        this.options.onCommitted?.(org.orgId, org.version)
        if (org.pending.length > 0) this.scheduleSave(org)
        this.compactLater(org)
        return
      }
      // Another process saved this version first: build on its snapshot and try again.
      if (attempt >= 5) throw new Error(`another process saved first ${attempt} times in a row`)
      const named = await snapshots!.current(org.orgId)
      if (named) await this.adopt(org, named)
    }
  }

  /** Has a Worker rewrite the snapshot as one base once its segments weigh enough; claimed unless a save came first. */
  private compactLater(org: OrgState): void {
    const { snapshots, logger, compactAfterBytes } = this.options
    const { layout, file } = org
    if (this.isClosed || !snapshots?.compact || org.compacting || !layout || !file) return
    if (layout.segmentBytes < Math.max(compactAfterBytes, layout.baseBytes / 2)) return
    org.compacting = true
    const from = { version: org.version, file }
    snapshots
      .compact(org.orgId, from)
      .then((compacted) => {
        this.claiming.add(org)
        return this.serially(org, async () => {
          // Segments saved while the Worker ran are appended to its base as they are.
          const current = org.layout!
          if (current.chain !== layout.chain || !org.file) return
          const saved = fileBytes(current) - fileBytes(layout)
          const tail = saved === 0 ? [] : [(await snapshots.read(org.orgId, { version: org.version, file: org.file })).subarray(fileBytes(layout))]
          const claimed = await snapshots.commit(org.orgId, org.version, [compacted, ...tail])
          if (!claimed) return
          const chain = decodeSnapshotHeader(compacted).chain
          const baseBytes = compacted.length - 8
          Object.assign(org, {
            ...claimed,
            layout: { chain, sections: 1 + current.sections - layout.sections, baseBytes, segmentBytes: current.segmentBytes - layout.segmentBytes },
          })
          logger.debug('code index compacted', { orgId: org.orgId, version: org.version, bytes: fileBytes(org.layout!) })
          this.options.onCommitted?.(org.orgId, org.version)
        }).finally(() => this.claiming.delete(org))
      })
      .catch((error) => logger.warn('code index compaction failed', { orgId: org.orgId, err: error }))
      .finally(() => (org.compacting = false))
  }
}
