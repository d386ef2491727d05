-- Conversations per user; messages keep the UI message parts as JSON so a client can redraw them.
CREATE TABLE chats (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  title TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);

CREATE INDEX chats_user_updated ON chats (user_id, updated_at);

CREATE TABLE chat_messages (
  chat_id TEXT NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  id TEXT NOT NULL,
  role TEXT NOT NULL,
  parts TEXT NOT NULL,
  metadata TEXT,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (chat_id, position)
);

CREATE UNIQUE INDEX chat_messages_id ON chat_messages (chat_id, id)
