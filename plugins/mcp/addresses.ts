/**
 * The Host and Origin values /mcp answers, against DNS rebinding: a page on an attacker's name that
 * resolves to this server is refused, because its browser sends that name as Host and its origin as
 * Origin. The transport compares each header with these lists exactly, port included.
 */

/** Host header values and origins /mcp accepts. */
export interface McpAddresses {
  readonly hosts: readonly string[]
  readonly origins: readonly string[]
}

const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443' }

/**
 * PUBLIC_BASE_URL's host name with its port, without it (a proxy such as nginx's `$host` drops the port)
 * and with the default port written out; its origin. Each extra host (`host` or `host:port`, as clients
 * send it) is accepted as Host, and its http and https origins as Origin: a page there is served by this
 * service too.
 */
export function mcpAddresses(publicBaseUrl: string, extraHosts: readonly string[] = []): McpAddresses {
  const base = new URL(publicBaseUrl)
  const hosts = [base.host, base.hostname, `${base.hostname}:${base.port || DEFAULT_PORTS[base.protocol]}`]
  const origins = [base.origin]
  for (const host of extraHosts) {
    const name = host.toLowerCase()
    hosts.push(name)
    // URL drops a default port, as browsers do in Origin.
    origins.push(new URL(`http://${name}`).origin, new URL(`https://${name}`).origin)
  }
  return { hosts: [...new Set(hosts)], origins: [...new Set(origins)] }
}
