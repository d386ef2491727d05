-- Billing: each organisation's payment customer and subscriptions, every verified payment event,
-- checkout requests (so a double submit makes one session) and the hash-chained audit log.

-- A plan granted until a moment (a cancelled subscription's period end); the first plan applies after it.
ALTER TABLE organizations ADD COLUMN plan_expires_at BIGINT;

CREATE INDEX organizations_plan_expires_at ON organizations (plan_expires_at);

CREATE TABLE billing_customers (
  org_id TEXT PRIMARY KEY REFERENCES organizations (id),
  customer_id TEXT NOT NULL UNIQUE,
  created_at BIGINT NOT NULL
);

-- One row per provider subscription. The snapshot columns come from the newest subscription event,
-- ordered by (snapshot_at, snapshot_rank, snapshot_event); paid_at is the first proof of payment.
CREATE TABLE billing_subscriptions (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES organizations (id),
  customer_id TEXT,
  plan TEXT,
  price_id TEXT,
  billing_interval TEXT,
  seats INTEGER,
  status TEXT,
  current_period_end BIGINT,
  cancel_at_period_end INTEGER NOT NULL DEFAULT 0,
  snapshot_at BIGINT,
  snapshot_rank INTEGER,
  snapshot_event TEXT,
  paid_at BIGINT,
  invoice_id TEXT,
  invoice_status TEXT,
  invoice_url TEXT,
  invoice_at BIGINT,
  invoice_rank INTEGER,
  invoice_event TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);

CREATE INDEX billing_subscriptions_org ON billing_subscriptions (org_id);

CREATE TABLE checkout_requests (
  org_id TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  session_id TEXT,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (org_id, fingerprint)
);

-- Verified webhook events, stored before they are acknowledged and applied from here.
CREATE TABLE payment_events (
  id TEXT PRIMARY KEY,
  type TEXT NOT NULL,
  created BIGINT NOT NULL,
  payload TEXT NOT NULL,
  received_at BIGINT NOT NULL,
  request_id TEXT,
  client_ip TEXT,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  processed_at BIGINT,
  result TEXT
);

CREATE INDEX payment_events_pending ON payment_events (processed_at, received_at);

-- Append-only; each row's hash covers the previous row's hash and its own content.
CREATE TABLE audit_log (
  seq BIGINT PRIMARY KEY,
  at BIGINT NOT NULL,
  org_id TEXT,
  actor TEXT NOT NULL,
  action TEXT NOT NULL,
  request_id TEXT,
  client_ip TEXT,
  details TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL
);

CREATE INDEX audit_log_org_seq ON audit_log (org_id, seq);

-- The chain's last sequence number and hash; appends update this row first, which serialises them.
CREATE TABLE audit_chain_head (
  id INTEGER PRIMARY KEY,
  seq BIGINT NOT NULL,
  hash TEXT NOT NULL
);

INSERT INTO audit_chain_head (id, seq, hash) VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000')
