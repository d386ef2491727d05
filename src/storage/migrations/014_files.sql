-- Uploaded files (POST /api/files). The bytes live in the database, so every replica reads them and a backup
-- (VACUUM INTO or pg_dump) holds them; `file_contents` keeps them apart so listing metadata never reads them.
-- BYTEA is PostgreSQL's binary type; SQLite stores the bound bytes as a BLOB under any declared type.
CREATE TABLE files (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  name TEXT NOT NULL,
  media_type TEXT NOT NULL,
  size BIGINT NOT NULL,
  created_at BIGINT NOT NULL
);

CREATE INDEX files_org ON files (org_id);
CREATE INDEX files_user ON files (user_id);

CREATE TABLE file_contents (
  file_id TEXT PRIMARY KEY,
  content BYTEA NOT NULL
);

-- Which chats a file was attached to: deleting the last of them deletes the file.
CREATE TABLE chat_files (
  chat_id TEXT NOT NULL,
  file_id TEXT NOT NULL,
  PRIMARY KEY (chat_id, file_id)
);

CREATE INDEX chat_files_file ON chat_files (file_id);
