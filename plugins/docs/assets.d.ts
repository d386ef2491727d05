// Imported `with { type: 'file' }`: Bun hands over the file's path, embedded in the single executable.
declare module '*/dist/browser/standalone.js' {
  const path: string
  export default path
}
