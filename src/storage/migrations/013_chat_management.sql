-- Chats are renamed, deleted and listed in pages. A deleted chat keeps its row, its title blanked and `deleted_at`
-- set, so its id stays taken and a late write for it (an answer stored by another process) finds it gone; its
-- messages go with the deletion. The list pages by (updated_at, id) newest first: this index serves it and
-- replaces the one on (user_id, updated_at).
ALTER TABLE chats ADD COLUMN deleted_at BIGINT;

DROP INDEX chats_user_updated;

CREATE INDEX chats_user_listing ON chats (user_id, updated_at, id)
