import { describe, expect, test } from 'bun:test'
import { detectLicense, summariseReadme } from '../../plugins/imports/analysis/documents.ts'
import { countLines, isBinary, languageOf } from '../../plugins/imports/analysis/languages.ts'
import { isLockFile, isManifestFile, readManifest } from '../../plugins/imports/analysis/manifests.ts'
import { wantsEventStream } from '../../plugins/imports/index.ts'

describe('languages', () => {
  test.each([
    ['src/app.tsx', 'TypeScript'],
    ['lib/x.mjs', 'JavaScript'],
    ['Dockerfile', 'Dockerfile'],
    ['build/Dockerfile.prod', 'Dockerfile'],
    ['Makefile', 'Makefile'],
    ['CMakeLists.txt', 'CMake'],
    ['pkg/main.go', 'Go'],
    ['a.h', 'C'],
    ['a.hpp', 'C++'],
    ['infra/main.tf', 'HCL'],
    ['notes.txt', undefined],
    ['.gitignore', undefined],
  ])('%s is %s', (path, language) => expect(languageOf(path)).toBe(language))

  test('lines and binary content', () => {
    expect(countLines(Buffer.from(''))).toBe(0)
    expect(countLines(Buffer.from('one'))).toBe(1)
    expect(countLines(Buffer.from('one\ntwo\n'))).toBe(2)
    expect(countLines(Buffer.from('one\ntwo'))).toBe(2)
    expect(isBinary(Buffer.from('text only'))).toBe(false)
    expect(isBinary(new Uint8Array([0x89, 0x50, 0, 1]))).toBe(true)
  })
})

describe('licences', () => {
  test.each([
    ['MIT', 'MIT License\n\nCopyright (c) 2024\n\nPermission is hereby granted, free of charge, to any person obtaining a copy'],
    ['Apache-2.0', '                                 Apache License\n                           Version 2.0, January 2004'],
    ['GPL-3.0', 'GNU GENERAL PUBLIC LICENSE\nVersion 3, 29 June 2007'],
    ['GPL-2.0', 'GNU GENERAL PUBLIC LICENSE\nVersion 2, June 1991'],
    ['LGPL-2.1', 'GNU LESSER GENERAL PUBLIC LICENSE\nVersion 2.1, February 1999'],
    ['AGPL-3.0', 'GNU AFFERO GENERAL PUBLIC LICENSE\nVersion 3, 19 November 2007'],
    ['MPL-2.0', 'Mozilla Public License Version 2.0\n=================================='],
    ['BSD-3-Clause', 'Redistribution and use in source and binary forms, with or without modification... 3. Neither the name of the copyright holder'],
    ['BSD-2-Clause', 'Redistribution and use in source and binary forms, with or without modification, are permitted'],
    ['ISC', 'ISC License\n\nPermission to use, copy, modify, and/or distribute this software for any purpose with or without fee'],
    ['Unlicense', 'This is free and unencumbered software released into the public domain.'],
    [null, 'All rights reserved. Proprietary.'],
  ])('%p', (spdx, text) => expect(detectLicense(text)).toBe(spdx))
})

describe('README summaries', () => {
  test('skips badges, images, HTML and code, and strips markdown', () => {
    const readme = [
      '<p align="center"><img src="logo.png"></p>',
      '',
      '# Acme *Widgets*',
      '',
      '[![CI](https://ci/badge.svg)](https://ci) [![npm](https://npm/badge.svg)](https://npm)',
      '',
      '```sh',
      'npm install widgets',
      '```',
      '',
      'Acme Widgets is a `tiny` library for [rendering](https://example.com) charts',
      'in **any** browser.',
      '',
      'Second paragraph is not part of the summary.',
    ].join('\n')
    expect(summariseReadme(readme)).toEqual({ title: 'Acme Widgets', summary: 'Acme Widgets is a tiny library for rendering charts in any browser.' })
  })

  test('reads setext headings and reStructuredText, and truncates long text at a word', () => {
    expect(summariseReadme('Project\n=======\n\nDoes things.\n')).toEqual({ title: 'Project', summary: 'Does things.' })
    const long = summariseReadme(`# T\n\n${'word '.repeat(200)}`)
    expect(long.summary.length).toBeLessThanOrEqual(401)
    expect(long.summary.endsWith('word…')).toBe(true)
  })
})

describe('manifests', () => {
  test('recognises manifest and lock files by name', () => {
    for (const name of ['package.json', 'go.mod', 'Cargo.toml', 'pyproject.toml', 'requirements-dev.txt', 'Gemfile', 'pom.xml', 'bun.lock', 'yarn.lock'])
      expect(isManifestFile(name)).toBe(true)
    expect(isManifestFile('notes.json')).toBe(false)
    expect(isLockFile('package-lock.json')).toBe(true)
    expect(isLockFile('package.json')).toBe(false)
  })

  test('Cargo.toml: dependencies, binaries, licence, frameworks', () => {
    const found = readManifest(
      'cli/Cargo.toml',
      '[package]\nname = "tool"\nlicense = "MIT OR Apache-2.0"\n\n[dependencies]\naxum = "0.7"\ntokio = { version = "1", features = ["full"] }\n\n[dev-dependencies]\ninsta = "1"\n\n[[bin]]\nname = "tool"\npath = "src/bin/tool.rs"\n',
    )
    expect(found.manifest).toEqual({
      path: 'cli/Cargo.toml',
      kind: 'Cargo.toml',
      ecosystem: 'cargo',
      name: 'tool',
      dependencies: [
        { name: 'axum', version: '0.7', dev: false },
        { name: 'tokio', version: '1', dev: false },
        { name: 'insta', version: '1', dev: true },
      ],
      truncated: false,
    })
    expect(found.frameworks).toEqual(['Axum', 'Tokio'])
    expect(found.entryPoints).toEqual(['cli/src/bin/tool.rs'])
    expect(found.license).toBe('MIT OR Apache-2.0')
    expect(found.packageManagers).toEqual(['cargo'])
  })

  test('requirements, Pipfile, poetry', () => {
    const requirements = readManifest('requirements.txt', '# web\nDjango>=5.0,<6\n-r base.txt\ncelery[redis]==5.3.6  # queue\n\n')
    expect(requirements.manifest!.dependencies).toEqual([
      { name: 'Django', version: '>=5.0,<6', dev: false },
      { name: 'celery', version: '==5.3.6', dev: false },
    ])
    expect(requirements.frameworks).toEqual(['Django', 'Celery'])
    const poetry = readManifest(
      'pyproject.toml',
      '[tool.poetry]\nname = "svc"\n\n[tool.poetry.dependencies]\npython = "^3.12"\nflask = "^3.0"\n\n[tool.poetry.group.dev.dependencies]\npytest = "^8"\n',
    )
    expect(poetry.manifest!.dependencies).toEqual([
      { name: 'flask', version: '^3.0', dev: false },
      { name: 'pytest', version: '^8', dev: true },
    ])
    expect(poetry.packageManagers).toEqual(['poetry'])
    const pipfile = readManifest('Pipfile', '[packages]\nrequests = "*"\n\n[dev-packages]\nblack = "*"\n')
    expect(pipfile.packageManagers).toEqual(['pipenv'])
    expect(pipfile.manifest!.dependencies.map((d) => d.name)).toEqual(['requests', 'black'])
  })

  test('Gemfile, composer.json, pom.xml, build.gradle, pubspec.yaml', () => {
    expect(readManifest('Gemfile', "source 'https://rubygems.org'\ngem 'rails', '~> 7.1'\ngem \"puma\"\n").frameworks).toEqual(['Ruby on Rails'])
    expect(readManifest('composer.json', '{"require": {"php": ">=8.2", "laravel/framework": "^11.0"}}').manifest!.dependencies).toEqual([
      { name: 'laravel/framework', version: '^11.0', dev: false },
    ])
    const pom = readManifest(
      'pom.xml',
      '<project><artifactId>shop</artifactId><dependencies><dependency><groupId>org.springframework.boot</groupId><artifactId>spring-boot-starter-web</artifactId></dependency><dependency><artifactId>junit-jupiter</artifactId><version>5.10.0</version><scope>test</scope></dependency></dependencies></project>',
    )
    expect(pom.manifest).toMatchObject({
      name: 'shop',
      dependencies: [
        { name: 'spring-boot-starter-web', dev: false },
        { name: 'junit-jupiter', version: '5.10.0', dev: true },
      ],
    })
    expect(pom.frameworks.sort()).toEqual(['JUnit', 'Spring Boot'])
    const gradle = readManifest(
      'build.gradle.kts',
      'dependencies {\n  implementation("io.ktor:ktor-server-core:2.3.0")\n  testImplementation("junit:junit:4.13")\n}\n',
    )
    expect(gradle.manifest!.dependencies).toEqual([
      { name: 'ktor-server-core', version: '2.3.0', dev: false },
      { name: 'junit', version: '4.13', dev: true },
    ])
    expect(readManifest('pubspec.yaml', 'name: app\ndependencies:\n  flutter:\n    sdk: flutter\n').frameworks).toEqual(['Flutter'])
  })

  test('a malformed manifest still counts for its package manager, a lock file for its own', () => {
    expect(readManifest('package.json', '{ not json')).toEqual({ packageManagers: [], frameworks: [], entryPoints: [] })
    expect(readManifest('Cargo.toml', 'this is = = not toml')).toEqual({ packageManagers: [], frameworks: [], entryPoints: [] })
    expect(readManifest('pnpm-lock.yaml', undefined).packageManagers).toEqual(['pnpm'])
    const npm = readManifest('package.json', JSON.stringify({ packageManager: 'pnpm@9.1.0', bin: { tool: './bin/tool.js' } }))
    expect(npm.packageManagers).toEqual(['pnpm'])
    expect(npm.entryPoints).toEqual(['bin/tool.js'])
  })

  test('dependency lists are capped', () => {
    const dependencies = Object.fromEntries(Array.from({ length: 250 }, (_, i) => [`dep-${i}`, '1.0.0']))
    const found = readManifest('package.json', JSON.stringify({ dependencies }))
    expect(found.manifest!.dependencies).toHaveLength(200)
    expect(found.manifest!.truncated).toBe(true)
  })
})

describe('content negotiation', () => {
  test.each([
    [null, false],
    ['*/*', false],
    ['application/json', false],
    ['text/event-stream', true],
    ['text/event-stream, application/json;q=0.5', true],
    ['application/json, text/event-stream;q=0.5', false],
    ['text/*', true],
  ])('Accept %p streams: %p', (accept, streams) => expect(wantsEventStream(accept)).toBe(streams))
})
