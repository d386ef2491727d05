/** The licence and README of a repository: which files they are, the licence's SPDX id, and a short summary. */

const LICENSE_FILE = /^(licen[cs]e|copying|unlicense)([-._][\w.-]*)?$/i
const README_FILE = /^readme(\.(md|markdown|mdx|rst|txt|adoc|org))?$/i

export const isLicenseFile = (name: string) => LICENSE_FILE.test(name)
export const isReadmeFile = (name: string) => README_FILE.test(name)

// Most specific first: the GPL family shares phrases, and the BSD texts differ by one clause.
const LICENSE_SIGNATURES: [string, RegExp[]][] = [
  ['AGPL-3.0', [/GNU AFFERO GENERAL PUBLIC LICENSE/i, /Version 3/i]],
  ['LGPL-3.0', [/GNU LESSER GENERAL PUBLIC LICENSE/i, /Version 3/i]],
  ['LGPL-2.1', [/GNU LESSER GENERAL PUBLIC LICENSE/i, /Version 2\.1/i]],
  ['GPL-3.0', [/GNU GENERAL PUBLIC LICENSE/i, /Version 3/i]],
  ['GPL-2.0', [/GNU GENERAL PUBLIC LICENSE/i, /Version 2/i]],
  ['MPL-2.0', [/Mozilla Public License,? (Version|v\.?) ?2\.0/i]],
  ['Apache-2.0', [/Apache License/i, /Version 2\.0/i]],
  ['MIT', [/Permission is hereby granted, free of charge/i]],
  ['ISC', [/Permission to use, copy, modify, and\/or distribute this software for any purpose/i]],
  ['BSD-3-Clause', [/Redistribution and use in source and binary forms/i, /Neither the name/i]],
  ['BSD-2-Clause', [/Redistribution and use in source and binary forms/i]],
  ['Unlicense', [/This is free and unencumbered software released into the public domain/i]],
  ['CC0-1.0', [/CC0 1\.0 Universal/i]],
  ['BSL-1.0', [/Boost Software License - Version 1\.0/i]],
  ['EPL-2.0', [/Eclipse Public License - v 2\.0/i]],
  ['Zlib', [/This software is provided 'as-is', without any express or implied/i, /misrepresented/i]],
]

/** The SPDX id of a licence text, or null when it is none of the common ones. */
export function detectLicense(text: string): string | null {
  const head = text.slice(0, 8000)
  for (const [spdx, patterns] of LICENSE_SIGNATURES) if (patterns.every((pattern) => pattern.test(head))) return spdx
  return null
}

const SUMMARY_CHARS = 400

function plain(markdown: string): string {
  return markdown
    .replace(/!\[[^\]]*\]\([^)]*\)/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]*)\]\[[^\]]*\]/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[*_`~]+/g, '')
    .replace(/\s+/g, ' ')
    .trim()
}

function truncate(text: string): string {
  if (text.length <= SUMMARY_CHARS) return text
  const cut = text.slice(0, SUMMARY_CHARS)
  return `${cut.slice(0, Math.max(cut.lastIndexOf(' '), SUMMARY_CHARS - 40))}…`
}

/**
 * Title and first prose paragraph of a README: headings, badges, images, HTML blocks, code fences and tables are
 * skipped, markdown and reStructuredText markup removed.
 */
export function summariseReadme(text: string): { title: string | null; summary: string } {
  const lines = text.replace(/\r\n?/g, '\n').split('\n')
  let title: string | null = null
  const paragraph: string[] = []
  let inFence = false
  for (let i = 0; i < lines.length && i < 400; i++) {
    const line = lines[i]!
    const trimmed = line.trim()
    if (/^(```|~~~)/.test(trimmed)) {
      inFence = !inFence
      if (paragraph.length) break
      continue
    }
    if (inFence) continue
    const heading = /^#{1,6}\s+(.*)$/.exec(trimmed)
    const underline = /^(=+|-+)$/.test(lines[i + 1]?.trim() ?? '') && trimmed !== ''
    if (heading || underline) {
      if (paragraph.length) break
      title ??= plain(heading ? heading[1]! : trimmed) || null
      if (underline) i++
      continue
    }
    if (trimmed === '') {
      if (paragraph.length) break
      continue
    }
    if (/^(\||<|!\[|\[!\[|\.\. |:|[-=]{3,}$)/.test(trimmed)) {
      if (paragraph.length) break
      continue
    }
    const text = plain(trimmed.replace(/^[-*+>]\s+/, ''))
    if (text) paragraph.push(text)
  }
  return { title, summary: truncate(paragraph.join(' ')) }
}
