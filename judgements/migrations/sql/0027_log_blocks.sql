-- Marks of judgements_logblock (judgements/log_blocks.py): the human events of a block of
-- judgements.log_blocks.BLOCK_QUERIES consecutive query ids, packed as the spans during
-- which each grade was its rater's current answer, so that a past moment is one pass of
-- numpy over them instead of a read and a sort of the log. Every statement that adds or
-- removes human events marks their blocks here (a row each in judgements_logblockmark,
-- an insert that never waits for another writer); a block is current while no mark of it
-- is left, and the reader that writes a block again deletes the marks its snapshot sees.
-- Bulk loads fire these too (one row per block a statement touches; a hashed DISTINCT
-- over the statement's rows, about a count of them): no WHEN.
-- So that marks do not pile up while nobody reads a past moment, a statement marking a
-- block deletes the block's older marks it can lock at once (SKIP LOCKED: it never
-- waits), in READ COMMITTED only (a REPEATABLE READ writer could fail on a mark deleted
-- since its snapshot); its own mark, in the same transaction, keeps the block marked.
-- Origin: migration 0027.

CREATE OR REPLACE FUNCTION judgements_log_blocks_mark(touched integer[])
 RETURNS void
 LANGUAGE plpgsql
AS $$
BEGIN
    IF current_setting('transaction_isolation') = 'read committed' THEN
        DELETE FROM judgements_logblockmark
        WHERE id IN (SELECT older.id FROM judgements_logblockmark older
                     WHERE older.block = ANY(touched)
                     FOR UPDATE SKIP LOCKED);
    END IF;
    INSERT INTO judgements_logblockmark (block) SELECT unnest(touched);
END $$;

CREATE OR REPLACE FUNCTION judgements_log_blocks_added()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
DECLARE
    touched integer[];
BEGIN
    SELECT array_agg(block) INTO touched
    FROM (SELECT DISTINCT (query_id / 128)::int4 AS block FROM added_judgements
          WHERE source <> 'machine') AS blocks;
    IF touched IS NOT NULL THEN
        PERFORM judgements_log_blocks_mark(touched);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION judgements_log_blocks_removed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
DECLARE
    touched integer[];
BEGIN
    SELECT array_agg(block) INTO touched
    FROM (SELECT DISTINCT (query_id / 128)::int4 AS block FROM removed_judgements
          WHERE source <> 'machine') AS blocks;
    IF touched IS NOT NULL THEN
        PERFORM judgements_log_blocks_mark(touched);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER log_blocks_judgements_added
    AFTER INSERT ON judgements_judgement
    REFERENCING NEW TABLE AS added_judgements
    FOR EACH STATEMENT
    EXECUTE FUNCTION judgements_log_blocks_added();
ALTER TABLE judgements_judgement ENABLE ALWAYS TRIGGER log_blocks_judgements_added;

CREATE OR REPLACE TRIGGER log_blocks_judgements_removed
    AFTER DELETE ON judgements_judgement
    REFERENCING OLD TABLE AS removed_judgements
    FOR EACH STATEMENT
    EXECUTE FUNCTION judgements_log_blocks_removed();
ALTER TABLE judgements_judgement ENABLE ALWAYS TRIGGER log_blocks_judgements_removed;
