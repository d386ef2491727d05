import { describe, expect, test } from 'bun:test'
import type { GitHttpRequest, GitHttpResponse, HttpClient } from 'isomorphic-git'
import { receivePackSeparately } from '../../plugins/imports/fetched-pack.ts'
import { pktLine } from '../fakes/git-server.ts'

const band = (channel: number, payload: string) => pktLine(Buffer.concat([Buffer.from([channel]), Buffer.from(payload)]))

// An upload-pack response as git sends one: shallow lines and their flush, the NAK, then the side band.
const response = Buffer.concat([
  pktLine('shallow 1111111111111111111111111111111111111111\n'),
  Buffer.from('0000'),
  pktLine('NAK\n'),
  band(2, 'Enumerating objects: 3, done.\n'),
  band(1, 'PACK-first-part'),
  band(2, 'Counting objects: 100% (3/3), done.\n'),
  band(1, '-second-part'),
  Buffer.from('0000'),
])
const expectedPassed = Buffer.concat([
  pktLine('shallow 1111111111111111111111111111111111111111\n'),
  Buffer.from('0000'),
  pktLine('NAK\n'),
  band(2, 'Enumerating objects: 3, done.\n'),
  band(2, 'Counting objects: 100% (3/3), done.\n'),
  Buffer.from('0000'),
])

function serving(body: Uint8Array, chunkBytes: number): HttpClient {
  return {
    async request(request: GitHttpRequest): Promise<GitHttpResponse> {
      async function* chunks() {
        for (let at = 0; at < body.byteLength; at += chunkBytes) yield body.subarray(at, at + chunkBytes)
      }
      return { url: request.url, method: request.method, statusCode: 200, statusMessage: 'OK', headers: {}, body: chunks() }
    },
  }
}

async function readAll(response: GitHttpResponse): Promise<Buffer> {
  const parts: Uint8Array[] = []
  for await (const part of response.body as AsyncIterable<Uint8Array>) parts.push(part)
  return Buffer.concat(parts)
}

const uploadPack = { url: 'http://127.0.0.1:1/acme/widgets.git/git-upload-pack', method: 'POST' }

describe('receiving the pack beside isomorphic-git', () => {
  for (const chunkBytes of [1, 3, 7, 64, 100_000])
    test(`the pack data is taken out of the side band and everything else passes unchanged (chunks of ${chunkBytes} bytes)`, async () => {
      const receiver = receivePackSeparately(serving(response, chunkBytes))
      const passed = await readAll(await receiver.http.request(uploadPack))
      expect(passed.equals(expectedPassed)).toBe(true)
      expect((await receiver.take())?.toString()).toBe('PACK-first-part-second-part')
      // Taken once.
      expect(await receiver.take()).toBeUndefined()
    })

  test('the ref advertisement is not touched', async () => {
    const receiver = receivePackSeparately(serving(response, 5))
    const passed = await readAll(await receiver.http.request({ url: 'http://127.0.0.1:1/acme/widgets.git/info/refs?service=git-upload-pack', method: 'GET' }))
    expect(passed.equals(response)).toBe(true)
    expect(await receiver.take()).toBeUndefined()
  })

  test('a response that is not pkt-lines is passed on whole and no pack is taken', async () => {
    const raw = Buffer.concat([pktLine('NAK\n'), Buffer.from('PACK raw, without a side band')])
    const receiver = receivePackSeparately(serving(raw, 4))
    const passed = await readAll(await receiver.http.request(uploadPack))
    expect(passed.equals(raw)).toBe(true)
    expect(await receiver.take()).toBeUndefined()
  })
})
