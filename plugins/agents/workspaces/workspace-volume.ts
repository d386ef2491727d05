/**
 * A filesystem of its own for each workspace tree, so the size limit holds while a command writes: an ext4
 * image file beside the tree (sparse: it takes the disk its files take), loop-mounted on the tree with room for
 * the workspace's bytes and files and their filesystem overhead, and no more inodes than the file limit allows.
 * A write past it fails inside the sandbox with ENOSPC. The image lives beside the Git directory, out of the
 * sandbox's reach, so what the kernel mounts is only ever written through the mount.
 *
 * Mounting needs root, mkfs.ext4 and loop devices; where any is missing the tree is a plain directory and the
 * limits are measured while commands run and after (see `whileWithinLimits`), which the log says once.
 */
import { existsSync, readFileSync, statSync } from 'node:fs'
import { mkdir, rm, rmdir, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from '../../../src/log.ts'

export interface VolumeLimits {
  maxFiles: number
  maxBytes: number
}

export interface WorkspaceVolumes {
  /** How a tree's size is bounded on this machine, in words. */
  readonly enforcement: () => string
  /** Makes `tree` (not existing yet) under `dir`, as a mounted image when the machine allows it. */
  create(dir: string, tree: string, limits: VolumeLimits): Promise<void>
  /**
   * Mounts the image of a tree made by another process (or before a restart) when this process does not see it
   * mounted; a plain-directory tree is left as it is. Synchronous: reads of a workspace look it up synchronously.
   */
  attach(dir: string, tree: string): void
  /** Unmounts every mount at or under `dir`; the image stays, so `attach` can mount it again. */
  release(dir: string): Promise<void>
}

const IMAGE = 'tree.img'
/** ext4 allocates whole blocks: a file of one byte takes a block, and so does each directory. */
const BLOCK_BYTES = 4096
/** The journal-less filesystem's own tables and a margin, on top of the workspace's files. */
const OVERHEAD_BYTES = 8 * 1024 * 1024

/** The image size for `limits`: every file and directory may take a block more than its bytes. */
export function imageBytes(limits: VolumeLimits): number {
  return limits.maxBytes + 2 * limits.maxFiles * BLOCK_BYTES + OVERHEAD_BYTES
}

async function run(cmd: string[]): Promise<void> {
  const child = Bun.spawn(cmd, { stdin: 'ignore', stdout: 'ignore', stderr: 'pipe', env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' } })
  const [err, code] = await Promise.all([new Response(child.stderr).text(), child.exited])
  if (code !== 0) throw new Error(`${cmd[0]} failed (${code}): ${err.trim().slice(0, 300)}`)
}

/** Mount points at or under `dir`, deepest first, read from this process's mount table. */
function mountsUnder(dir: string): string[] {
  let table = ''
  try {
    table = readFileSync('/proc/self/mountinfo', 'utf8')
  } catch {
    return []
  }
  // Field 5 is the mount point, with space, tab, newline and backslash written as octal escapes.
  const points = table
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => p !== undefined)
    .map((p) => p.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8))))
  return points.filter((p) => p === dir || p.startsWith(`${dir}/`)).sort((a, b) => b.length - a.length)
}

export interface WorkspaceVolumesOptions {
  /** False keeps every tree a plain directory, as on a machine that cannot mount images. Default true. */
  images?: boolean
}

/** Whether a filesystem is mounted on `tree`: it then lies on another device than its parent `dir` (two stats, on every read of another process's workspace). */
function mountedOn(dir: string, tree: string): boolean {
  try {
    return statSync(tree).dev !== statSync(dir).dev
  } catch {
    return false
  }
}

export function createWorkspaceVolumes(logger: Logger, options: WorkspaceVolumesOptions = {}): WorkspaceVolumes {
  const mkfs = Bun.which('mkfs.ext4', { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' })
  const mount = Bun.which('mount', { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' })
  const umount = Bun.which('umount', { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' })
  let unavailable: string | undefined =
    options.images === false
      ? 'images are turned off'
      : process.getuid?.() !== 0
        ? 'the service does not run as root'
        : !mkfs || !mount || !umount
          ? 'mkfs.ext4 or mount is missing (e2fsprogs, mount)'
          : undefined
  let reported = false
  const fallBack = (why: string) => {
    unavailable = why
    if (!reported) logger.warn('agent workspaces are plain directories: their size is measured, not bounded by a filesystem', { reason: why })
    reported = true
  }

  return {
    enforcement: () =>
      unavailable
        ? `measured while commands run and after each (${unavailable}); RLIMIT_FSIZE bounds each file`
        : 'a loop-mounted ext4 image per workspace: a write past its size or inode count fails with ENOSPC',

    async create(dir, tree, limits) {
      await mkdir(dir, { recursive: true, mode: 0o700 })
      await mkdir(tree, { mode: 0o700 })
      if (unavailable) return
      const image = join(dir, IMAGE)
      try {
        await writeFile(image, '', { mode: 0o600 })
        await truncate(image, imageBytes(limits))
        await run([mkfs!, '-q', '-F', '-m', '0', '-N', String(2 * limits.maxFiles + 16), '-O', '^has_journal', '-E', 'lazy_itable_init=1,nodiscard', image])
        await run([mount!, '-o', 'loop,nosuid,nodev', image, tree])
        // An empty tree, as a plain directory would be.
        await rmdir(join(tree, 'lost+found')).catch(() => {})
      } catch (err) {
        await this.release(dir).catch(() => {})
        await rm(image, { force: true })
        fallBack(err instanceof Error ? err.message : String(err))
      }
    },

    attach(dir, tree) {
      const image = join(dir, IMAGE)
      if (!mount || !existsSync(image) || mountedOn(dir, tree)) return
      // mount refuses an image another loop device already holds, so two processes never mount it twice.
      const result = Bun.spawnSync([mount, '-o', 'loop,nosuid,nodev', image, tree], {
        stdin: 'ignore',
        stdout: 'ignore',
        stderr: 'pipe',
        env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' },
      })
      if (result.exitCode !== 0) logger.warn('agent workspace image not mounted', { tree, err: result.stderr.toString().trim().slice(0, 300) })
    },

    async release(dir) {
      for (const point of mountsUnder(dir)) {
        // Lazy: a command's process still inside is killed by its sandbox; the mount goes when it does.
        await run([umount!, '-l', point]).catch((err) => logger.warn('agent workspace not unmounted', { err, point }))
      }
    },
  }
}
