-- Sign-in sessions (refresh token families) that ended: by a logout, or by a refresh token presented twice.
-- One row per family, written before the family's tokens are revoked; a refresh checks it after writing
-- its new token, so of a refresh and a logout racing, the logout always wins (src/auth/access-service.ts).
CREATE TABLE ended_sessions (
  family_id TEXT PRIMARY KEY,
  ended_at BIGINT NOT NULL
)
