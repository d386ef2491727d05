// Tests read response bodies of many shapes; let them index into JSON freely.
interface Response {
  json(): Promise<any>
}
interface Request {
  json(): Promise<any>
}
type BodyInit = ConstructorParameters<typeof Response>[0]
