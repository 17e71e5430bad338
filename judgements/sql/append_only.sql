-- The judgement log is append-only: an UPDATE of an event is refused, whatever code
-- sends it (a BEFORE trigger; DELETE stays possible so that a query, a document or a
-- project can go with its events). Origin: migration 0002.

CREATE OR REPLACE FUNCTION judgements_refuse_update()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'judgements are append-only: add a new event instead of updating %',
        OLD.id USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE OR REPLACE TRIGGER judgement_append_only
    BEFORE UPDATE ON judgements_judgement
    FOR EACH ROW
    EXECUTE FUNCTION judgements_refuse_update();
