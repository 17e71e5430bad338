-- Going back from 0028_querygrades_project: the packed totals' function as 0021 defined
-- it, which adds a query's judgements_querygrades row without its project.

CREATE OR REPLACE FUNCTION judgements_grade_summaries_refresh(changed_queries bigint[], add_missing boolean, changed_lists bigint[])
 RETURNS void
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
AS $$
BEGIN
    IF add_missing THEN
        INSERT INTO judgements_querygrades (query_id, graded, judged)
        SELECT query.id, 0, 0
        FROM judgements_query query
        WHERE query.id = ANY(changed_queries)
        ORDER BY query.id
        ON CONFLICT (query_id) DO NOTHING;
    END IF;
    SELECT coalesce(array_agg(locked.query_id), '{}') INTO changed_queries
    FROM (
        SELECT summary.query_id FROM judgements_querygrades summary
        WHERE summary.query_id = ANY(changed_queries)
        ORDER BY summary.query_id
        FOR UPDATE
    ) AS locked;
    IF cardinality(changed_queries) = 0 THEN
        RETURN;
    END IF;

    -- With changed_lists, those lists' hits of the queries changed; without, grades did.
    IF changed_lists IS NOT NULL THEN
        DELETE FROM judgements_rankedhits ranked
        WHERE ranked.query_id = ANY(changed_queries)
          AND ranked.result_list_id = ANY(changed_lists)
          AND NOT EXISTS (
              SELECT FROM judgements_hit hit
              WHERE hit.result_list_id = ranked.result_list_id
                AND hit.query_id = ranked.query_id);
        DELETE FROM judgements_rankedgrades ranked
        WHERE ranked.query_id = ANY(changed_queries)
          AND ranked.result_list_id = ANY(changed_lists)
          AND NOT EXISTS (
              SELECT FROM judgements_hit hit
              WHERE hit.result_list_id = ranked.result_list_id
                AND hit.query_id = ranked.query_id);
        -- One statement each: an insert's NOT EXISTS sees the rows as they were before
        -- it, which the update changes but never adds to.
        WITH counted AS (
            SELECT hit.result_list_id, hit.query_id, count(*)::integer AS hits,
                   string_agg(int8send(hit.document_id), ''::bytea ORDER BY hit.rank)
                       AS documents
            FROM judgements_hit hit
            WHERE hit.query_id = ANY(changed_queries)
              AND hit.result_list_id = ANY(changed_lists)
            GROUP BY hit.result_list_id, hit.query_id
        ),
        updated AS (
            UPDATE judgements_rankedhits ranked
            SET hits = counted.hits, documents = counted.documents
            FROM counted
            WHERE ranked.result_list_id = counted.result_list_id
              AND ranked.query_id = counted.query_id
              AND (ranked.hits, ranked.documents)
                  IS DISTINCT FROM (counted.hits, counted.documents)
        )
        INSERT INTO judgements_rankedhits (result_list_id, query_id, hits, documents)
        SELECT counted.result_list_id, counted.query_id, counted.hits, counted.documents
        FROM counted
        WHERE add_missing
          AND NOT EXISTS (
              SELECT FROM judgements_rankedhits ranked
              WHERE ranked.result_list_id = counted.result_list_id
                AND ranked.query_id = counted.query_id)
        ORDER BY counted.result_list_id, counted.query_id;
    END IF;

    -- The totals are counted here; the packed grades under each consensus policy are
    -- only marked stale, and judgements.packed fills them in numpy (metrics.core.consensus)
    -- before they are read, holding this row's lock as these writers do.
    WITH totals AS (
        SELECT locked.query_id,
               coalesce(sum(pair.graded), 0)::integer AS graded,
               count(pair.query_id)::integer AS judged
        FROM unnest(changed_queries) AS locked (query_id)
        LEFT JOIN judgements_pairgrade pair
            ON pair.query_id = locked.query_id AND pair.graded > 0
        GROUP BY locked.query_id
    )
    UPDATE judgements_querygrades summary
    SET graded = totals.graded, judged = totals.judged, stale = true
    FROM totals
    WHERE summary.query_id = totals.query_id
      AND (summary.graded, summary.judged, summary.stale)
          IS DISTINCT FROM (totals.graded, totals.judged, true);
END $$;
