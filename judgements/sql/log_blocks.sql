-- Marks of judgements_logblock (judgements/log_blocks.py): the human events of a block of
-- judgements.log_blocks.BLOCK_QUERIES consecutive query ids, packed as the spans during
-- which each grade was its rater's current answer, so that a past moment is one pass of
-- numpy over them instead of a read and a sort of the log. Every statement that adds or
-- removes human events marks their blocks here (a row each in judgements_logblockmark,
-- an insert that never waits for another writer); a block is current while no mark of it
-- is left, and the reader that writes a block again deletes the marks its snapshot sees.
-- Bulk loads fire these too (one row per block a statement touches): no WHEN.
-- Origin: migration 0027.

CREATE OR REPLACE FUNCTION judgements_log_blocks_added()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO judgements_logblockmark (block)
    SELECT DISTINCT (query_id / 128)::int4 FROM added_judgements WHERE source <> 'machine';
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION judgements_log_blocks_removed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO judgements_logblockmark (block)
    SELECT DISTINCT (query_id / 128)::int4 FROM removed_judgements WHERE source <> 'machine';
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
