/**
 * A small multi-language repository for relevance tests, and the questions a developer would ask of
 * it with the file that answers each one.
 */
import type { RepositoryFile } from '../../plugins/code-search/types.ts'

export const corpus: RepositoryFile[] = [
  {
    path: 'src/auth/jwt.ts',
    language: 'TypeScript',
    content: `import { createHmac, timingSafeEqual } from 'node:crypto'

export interface AccessClaims {
  sub: string
  exp: number
}

/** Signs the claims as an HS256 JSON Web Token. */
export function signAccessToken(claims: AccessClaims, secret: string): string {
  const header = base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))
  const payload = base64url(JSON.stringify(claims))
  const signature = createHmac('sha256', secret).update(\`\${header}.\${payload}\`).digest('base64url')
  return \`\${header}.\${payload}.\${signature}\`
}

/** Verifies the token's HMAC signature and its expiry; answers the claims or throws. */
export function verifyAccessToken(token: string, secret: string, now = Date.now()): AccessClaims {
  const [header, payload, signature] = token.split('.')
  if (!header || !payload || !signature) throw new Error('malformed token')
  const expected = createHmac('sha256', secret).update(\`\${header}.\${payload}\`).digest()
  const given = Buffer.from(signature, 'base64url')
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new Error('bad signature')
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as AccessClaims
  if (claims.exp * 1000 <= now) throw new Error('token expired')
  return claims
}

function base64url(text: string): string {
  return Buffer.from(text).toString('base64url')
}
`,
  },
  {
    path: 'src/http/retry.ts',
    language: 'TypeScript',
    content: `/** Fetch with retries: exponential backoff with jitter, honouring Retry-After. */
export async function fetchWithRetry(url: string, init: RequestInit = {}, attempts = 3): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const response = await fetch(url, init)
    if (response.status !== 429 && response.status < 500) return response
    if (attempt + 1 >= attempts) return response
    const wait = parseRetryAfter(response.headers.get('retry-after')) ?? backoffDelay(attempt)
    await new Promise((resolve) => setTimeout(resolve, wait))
  }
}

/** Milliseconds from a Retry-After header: seconds or an HTTP date. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return seconds * 1000
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}

function backoffDelay(attempt: number): number {
  const base = 200 * 2 ** attempt
  return base + Math.random() * base
}
`,
  },
  {
    path: 'src/db/migrations.ts',
    language: 'TypeScript',
    content: `import { readdirSync, readFileSync } from 'node:fs'

/** Applies every pending SQL migration file in order, each inside its own transaction. */
export async function runMigrations(db: { query(sql: string): Promise<unknown> }, dir: string): Promise<string[]> {
  const applied: string[] = []
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.sql')).sort()) {
    await db.query('BEGIN')
    try {
      await db.query(readFileSync(\`\${dir}/\${file}\`, 'utf8'))
      await db.query('COMMIT')
      applied.push(file)
    } catch (error) {
      await db.query('ROLLBACK')
      throw error
    }
  }
  return applied
}
`,
  },
  {
    path: 'app/billing/invoice.py',
    language: 'Python',
    content: `from decimal import Decimal, ROUND_HALF_UP


class InvoiceCalculator:
    """Totals an invoice: line items, a percentage discount and sales tax."""

    def __init__(self, tax_rate: Decimal):
        self.tax_rate = tax_rate
        self.items = []

    def add_item(self, description: str, quantity: int, unit_price: Decimal) -> None:
        self.items.append((description, quantity, unit_price))

    def subtotal(self) -> Decimal:
        return sum((quantity * price for _, quantity, price in self.items), Decimal("0"))

    def apply_discount(self, amount: Decimal, percent: Decimal) -> Decimal:
        return amount - (amount * percent / 100)

    def compute_tax(self, amount: Decimal) -> Decimal:
        tax = amount * self.tax_rate
        return tax.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)

    def total(self, discount_percent: Decimal = Decimal("0")) -> Decimal:
        discounted = self.apply_discount(self.subtotal(), discount_percent)
        return discounted + self.compute_tax(discounted)
`,
  },
  {
    path: 'app/utils/slugify.py',
    language: 'Python',
    content: `import re
import unicodedata


def slugify(title: str) -> str:
    """Turns an article title into a URL slug: ASCII, lower case, words joined by hyphens."""
    normalized = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[a-z0-9]+", normalized.lower())
    return "-".join(words)
`,
  },
  {
    path: 'internal/cache/lru.go',
    language: 'Go',
    content: `package cache

import "container/list"

// LRUCache keeps at most capacity entries and evicts the least recently used one.
type LRUCache struct {
	capacity int
	order    *list.List
	entries  map[string]*list.Element
}

type entry struct {
	key   string
	value []byte
}

func NewLRUCache(capacity int) *LRUCache {
	return &LRUCache{capacity: capacity, order: list.New(), entries: make(map[string]*list.Element)}
}

// Get answers the value and marks the entry as recently used.
func (c *LRUCache) Get(key string) ([]byte, bool) {
	element, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(element)
	return element.Value.(*entry).value, true
}

// Put stores the value, evicting the oldest entry when the cache is full.
func (c *LRUCache) Put(key string, value []byte) {
	if element, ok := c.entries[key]; ok {
		element.Value.(*entry).value = value
		c.order.MoveToFront(element)
		return
	}
	if c.order.Len() >= c.capacity {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*entry).key)
	}
	c.entries[key] = c.order.PushFront(&entry{key: key, value: value})
}
`,
  },
  {
    path: 'internal/server/graceful.go',
    language: 'Go',
    content: `package server

import (
	"context"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// RunWithGracefulShutdown serves until SIGTERM or SIGINT, then lets in-flight requests finish.
func RunWithGracefulShutdown(srv *http.Server, drainTimeout time.Duration) error {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	errs := make(chan error, 1)
	go func() { errs <- srv.ListenAndServe() }()
	select {
	case err := <-errs:
		return err
	case <-stop:
	}
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	return srv.Shutdown(ctx)
}
`,
  },
  {
    path: 'src/lexer/tokenizer.rs',
    language: 'Rust',
    content: `/// Splits source text into tokens: identifiers, numbers and punctuation.
pub struct Tokenizer<'a> {
    source: &'a str,
    position: usize,
}

#[derive(Debug, PartialEq)]
pub enum Token<'a> {
    Identifier(&'a str),
    Number(f64),
    Punct(char),
}

impl<'a> Tokenizer<'a> {
    pub fn new(source: &'a str) -> Self {
        Tokenizer { source, position: 0 }
    }

    /// Reads the next token, skipping whitespace; None at the end of the input.
    pub fn next_token(&mut self) -> Option<Token<'a>> {
        let rest = &self.source[self.position..];
        let trimmed = rest.trim_start();
        self.position += rest.len() - trimmed.len();
        let first = trimmed.chars().next()?;
        if first.is_ascii_digit() {
            let end = trimmed.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(trimmed.len());
            self.position += end;
            return trimmed[..end].parse().ok().map(Token::Number);
        }
        if first.is_alphabetic() || first == '_' {
            let end = trimmed.find(|c: char| !c.is_alphanumeric() && c != '_').unwrap_or(trimmed.len());
            self.position += end;
            return Some(Token::Identifier(&trimmed[..end]));
        }
        self.position += first.len_utf8();
        Some(Token::Punct(first))
    }
}
`,
  },
  {
    path: 'payments/src/main/java/com/example/payments/StripeWebhookHandler.java',
    language: 'Java',
    content: `package com.example.payments;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

public class StripeWebhookHandler {
    private static final long TOLERANCE_SECONDS = 300;
    private final byte[] endpointSecret;

    public StripeWebhookHandler(String endpointSecret) {
        this.endpointSecret = endpointSecret.getBytes(StandardCharsets.UTF_8);
    }

    /** Checks the Stripe-Signature header: the HMAC of "timestamp.payload" and a timestamp within tolerance. */
    public boolean verifyStripeSignature(String payload, long timestamp, String signatureHex, long nowSeconds) throws Exception {
        if (Math.abs(nowSeconds - timestamp) > TOLERANCE_SECONDS) {
            return false;
        }
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(endpointSecret, "HmacSHA256"));
        byte[] expected = mac.doFinal((timestamp + "." + payload).getBytes(StandardCharsets.UTF_8));
        return MessageDigest.isEqual(expected, hexToBytes(signatureHex));
    }

    private static byte[] hexToBytes(String hex) {
        byte[] out = new byte[hex.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }
}
`,
  },
  {
    path: 'lib/markdown_renderer.rb',
    language: 'Ruby',
    content: `# Renders a small Markdown subset to HTML: headings, links and paragraphs.
class MarkdownRenderer
  def render(text)
    text.split(/\\n{2,}/).map { |block| render_block(block) }.join("\\n")
  end

  def render_block(block)
    if (match = block.match(/\\A(#+)\\s+(.*)/))
      level = match[1].length
      "<h#{level}>#{render_links(match[2])}</h#{level}>"
    else
      "<p>#{render_links(block)}</p>"
    end
  end

  def render_links(text)
    text.gsub(/\\[([^\\]]+)\\]\\(([^)]+)\\)/) { "<a href=\\"#{$2}\\">#{$1}</a>" }
  end
end
`,
  },
  {
    path: 'docs/deployment.md',
    language: 'Markdown',
    content: `# Deployment

## Docker image

Build the image with \`docker build -t shop .\` and run it with the environment variables below.

## Environment variables

| name | meaning |
|---|---|
| DATABASE_URL | PostgreSQL connection string |
| STRIPE_SECRET_KEY | payment provider key |

## Health checks

The container answers GET /health once the database is reachable.
`,
  },
  {
    path: 'scripts/backup.sh',
    language: 'Shell',
    content: `#!/usr/bin/env bash
# Nightly PostgreSQL backup: dumps the database and keeps the last seven dumps.
set -euo pipefail

backup_database() {
  local target="/var/backups/db-$(date +%F).sql.gz"
  pg_dump "$DATABASE_URL" | gzip > "$target"
  ls -1t /var/backups/db-*.sql.gz | tail -n +8 | xargs -r rm --
}

backup_database
`,
  },
]

/** A question, and the file that answers it. */
export const labelledQueries: { query: string; expected: string }[] = [
  { query: 'verify jwt signature and expiry', expected: 'src/auth/jwt.ts' },
  { query: 'retry with exponential backoff', expected: 'src/http/retry.ts' },
  { query: 'parse Retry-After header', expected: 'src/http/retry.ts' },
  { query: 'apply migrations in a transaction', expected: 'src/db/migrations.ts' },
  { query: 'calculate invoice sales tax', expected: 'app/billing/invoice.py' },
  { query: 'turn a title into a url slug', expected: 'app/utils/slugify.py' },
  { query: 'evict least recently used cache entry', expected: 'internal/cache/lru.go' },
  { query: 'graceful shutdown on SIGTERM', expected: 'internal/server/graceful.go' },
  { query: 'tokenizer next token', expected: 'src/lexer/tokenizer.rs' },
  { query: 'stripe webhook signature tolerance', expected: 'payments/src/main/java/com/example/payments/StripeWebhookHandler.java' },
  { query: 'render markdown links to html', expected: 'lib/markdown_renderer.rb' },
  { query: 'nightly postgres backup', expected: 'scripts/backup.sh' },
  { query: 'docker environment variables', expected: 'docs/deployment.md' },
]

/** Identifier queries in another spelling than the code's: the index must see through it. */
export const identifierQueries: { query: string; expected: string }[] = [
  { query: 'nextToken', expected: 'src/lexer/tokenizer.rs' },
  { query: 'applyDiscount', expected: 'app/billing/invoice.py' },
  { query: 'parse_retry_after', expected: 'src/http/retry.ts' },
  { query: 'LruCache', expected: 'internal/cache/lru.go' },
]
