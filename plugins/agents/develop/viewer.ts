/**
 * read_file: a file shown a window at a time, with line numbers, like SWE-agent's viewer. The first line of the
 * answer names the range shown, the file's length and where the next window starts:
 * `src/a.ts lines 1,761-1,860 of 5,565; next: start=1,861`. A window that would pass the answer's size is cut
 * after its last whole line and says so, with the start of the rest; a start past the end is refused with the
 * file's length.
 */
import { refused, type ToolOutcome } from './context.ts'
import { count, linesLabel, linesOf, numberedLine, plural } from './text.ts'

/** Lines in a window unless the model asks for another number. */
export const WINDOW_LINES = 100
/** Most lines one window may ask for; the answer's size usually cuts it first. */
export const MAX_WINDOW_LINES = 2000

export function viewFile(path: string, text: string, request: { start?: number; lines?: number }, maxChars: number): ToolOutcome {
  const lines = linesOf(text)
  const total = lines.length
  const start = request.start ?? 1
  const wanted = Math.min(request.lines ?? WINDOW_LINES, MAX_WINDOW_LINES)
  if (total === 0) {
    if (start > 1) return refused(`${path} is empty (0 lines); there is no line ${count(start)}`)
    return { answer: `${path} is empty (0 lines).`, summary: `read ${path} (empty)` }
  }
  if (start > total) return refused(`${path} has ${plural(total, 'line')}; start=${count(start)} is past its end (start may be 1 to ${count(total)})`)
  const last = Math.min(total, start + wanted - 1)
  const width = String(last).length
  // Room for the first line, which is written once the window's end is known.
  const budget = maxChars - 200
  const body: string[] = []
  let used = 0
  let end = start - 1
  for (let n = start; n <= last; n++) {
    const line = numberedLine(n, lines[n - 1]!, width)
    // The first line always goes in (cut if it must), so a window is never empty.
    if (body.length > 0 && used + line.length + 1 > budget) break
    body.push(body.length === 0 && line.length > budget ? `${line.slice(0, budget)} [… line cut at the answer's size]` : line)
    used += line.length + 1
    end = n
  }
  const cut = end < last
  const where =
    start === 1 && end === total
      ? ' (the whole file)'
      : end === total
        ? ' (the end of the file)'
        : `${cut ? ` (cut at the answer's size of ${count(maxChars)} characters: ${linesLabel(end + 1, last)} not shown)` : ''}; next: start=${count(end + 1)}`
  return {
    answer: [`${path} ${linesLabel(start, end)} of ${count(total)}${where}`, ...body].join('\n'),
    summary: `read ${path} (${linesLabel(start, end)} of ${count(total)})`,
  }
}
