-- Each organisation may choose its default model (GET /api/models, PUT /api/org/model): a model id as the catalogue
-- names it. NULL, or a model no longer offered, falls back to the service's default (CHAT_MODEL).
ALTER TABLE organizations ADD COLUMN default_model TEXT;
