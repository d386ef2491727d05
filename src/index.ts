import { createApp } from './app.ts'
import { ConfigError, loadConfig } from './config.ts'
import { buildDependencies } from './dependencies.ts'
import { startServer } from './server.ts'

/** load config -> build dependencies -> createApp -> listen; SIGTERM/SIGINT -> drain and stop. */
async function main() {
  let config
  try {
    config = loadConfig()
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message)
      process.exit(78) // EX_CONFIG
    }
    throw err
  }

  const deps = await buildDependencies(config)
  const running = startServer(createApp(deps), deps)
  for (const part of config.unconfigured) deps.logger.warn('not configured', { part })
  for (const name of config.generatedSecrets)
    deps.logger.warn('secret generated into DATA_DIR/secrets.json; set it in production', { variable: name })

  const stop = (signal: string) => void running.shutdown(signal).then(() => process.exit(0))
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
}

// `server admin <command>` runs an operator command instead of the server.
if (process.argv[2] === 'admin') {
  const cli = await import('./cli.ts')
  process.exit(await cli.main(process.argv.slice(3)))
} else {
  await main()
}
