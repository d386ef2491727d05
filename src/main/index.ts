import { createApp } from './app.ts'
import { EXIT, VERSION_TEXT, configurationFailure, parseServerArgs, serverUsage } from '../command-line.ts'
import { describeVariables, loadConfig, type Config } from './config.ts'
import { buildDependencies, type Dependencies } from './dependencies.ts'
import { PortInUseError, startServer, type RunningServer } from './server.ts'
import { announceSetupCode, setupUrl } from '../../plugins/setup/index.ts'

/** load config -> build dependencies -> createApp -> listen; SIGTERM/SIGINT -> drain and stop. */
async function main() {
  let config: Config
  let deps: Dependencies
  try {
    config = loadConfig()
    deps = await buildDependencies(config)
  } catch (err) {
    const message = configurationFailure(err)
    if (message === undefined) throw err
    console.error(message)
    process.exit(EXIT.config)
  }
  let running: RunningServer
  try {
    running = startServer(createApp(deps), deps)
  } catch (err) {
    if (!(err instanceof PortInUseError)) throw err
    deps.logger.error('port in use', { error: err.message })
    await deps.close()
    console.error(err.message)
    process.exit(EXIT.config)
  }
  for (const part of config.unconfigured) deps.logger.warn('not configured', { part })
  for (const name of config.generatedSecrets) deps.logger.warn('secret generated into DATA_DIR/secrets.json; set it in production', { variable: name })

  const stop = (signal: string) => void running.shutdown(signal).then(() => process.exit(0))
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
  // First run: while no user exists, a one-time code to create the first owner at /setup, as the last start-up line.
  await announceSetupCode(deps.setup, deps.logger, setupUrl(config.publicBaseUrl, running.server.port!))
  // The service already answers; what configured parts would load at their first request loads now.
  await deps.warmUp()
}

// argv[0] is the runtime and argv[1] the script, in the executable too.
const command = parseServerArgs(
  process.argv.slice(2),
  describeVariables().map((v) => v.name),
)
switch (command.run) {
  case 'serve':
    await main()
    break
  case 'admin': {
    const cli = await import('./cli.ts')
    process.exit(await cli.main(command.args))
    break
  }
  case 'help':
    console.log(serverUsage())
    process.exit(EXIT.ok)
    break
  case 'version':
    console.log(VERSION_TEXT)
    process.exit(EXIT.ok)
    break
  case 'usage-error':
    console.error(`error: ${command.message}\nRun with --help for usage.`)
    process.exit(EXIT.usage)
}
