"""Schema changes as named, ordered migrations, recorded in `schema_migrations`.

Append new migrations at the end; never edit one that has shipped. docs/store.md documents
the resulting schema and tests/store/test_docs_schema.py keeps the two in step.
"""

from __future__ import annotations

import re
from typing import Callable

import duckdb

from .errors import StoreError
from .writes import transaction

SCHEMA_MIGRATIONS_DDL = (
    "CREATE TABLE schema_migrations ("
    " id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
)


Finish = Callable[[duckdb.DuckDBPyConnection], None]
_MIGRATION_NAME = re.compile(r"[0-9]{3}_[a-z0-9_]{1,60}")


def _reruns_and_model_identity(con: duckdb.DuckDBPyConnection) -> Finish:
    """017: the columns (harness_factor from the notes older checks wrote); once every pending
    migration is applied (the rules write tables later migrations may change), every run's
    variant and reruns decided by this version's rules."""
    con.execute("ALTER TABLE runs ADD COLUMN started_at TIMESTAMP")
    con.execute("ALTER TABLE runs ADD COLUMN superseded_by VARCHAR")
    con.execute("ALTER TABLE runs ADD COLUMN harness_factor DOUBLE")
    con.execute("UPDATE runs SET harness_factor = CASE WHEN harness_note LIKE '%on 0–100%' THEN 100"
                " WHEN harness_agrees IS NOT NULL THEN 1 END")
    from .runs import (
        refresh_identities,  # the rules live with the writes; imported only to upgrade
    )

    return refresh_identities


# Each step is SQL, or a function of the connection for what SQL cannot say (rules kept in
# Python); such a function may return one to run once every pending step is applied.
MIGRATIONS: list[tuple[str, str | Callable[[duckdb.DuckDBPyConnection], Finish | None]]] = [
    (
        "001_core_tables",
        """
        CREATE TABLE runs (
            run_id VARCHAR PRIMARY KEY,
            source_format VARCHAR NOT NULL,
            source_path VARCHAR NOT NULL,
            content_hash VARCHAR NOT NULL,
            suite VARCHAR,
            run_name VARCHAR NOT NULL,
            model VARCHAR NOT NULL,
            model_deployment VARCHAR,
            model_metadata JSON,
            dataset VARCHAR NOT NULL,
            domain VARCHAR,
            method VARCHAR,
            run_groups JSON,
            main_metric VARCHAR,
            main_metric_source VARCHAR,
            metric_max DOUBLE,
            lower_is_better BOOLEAN,
            pass_threshold DOUBLE,
            n_predictions INTEGER NOT NULL,
            n_failures INTEGER NOT NULL,
            n_infra_errors INTEGER NOT NULL,
            record_schema_version INTEGER NOT NULL,
            ingested_at TIMESTAMP NOT NULL
        );
        CREATE TABLE instances (
            run_id VARCHAR NOT NULL,
            instance_id VARCHAR NOT NULL,
            raw_instance_id VARCHAR NOT NULL,
            split VARCHAR,
            sub_split VARCHAR,
            perturbation VARCHAR,
            input_text VARCHAR,
            input_messages JSON,
            refs JSON,
            choices JSON
        );
        CREATE TABLE predictions (
            run_id VARCHAR NOT NULL,
            instance_id VARCHAR NOT NULL,
            train_trial_index INTEGER NOT NULL,
            output_text VARCHAR,
            mapped_output VARCHAR,
            thinking_text VARCHAR,
            metrics JSON,
            annotations JSON,
            score DOUBLE,
            is_correct BOOLEAN,
            infra_error BOOLEAN NOT NULL,
            error_message VARCHAR
        );
        CREATE VIEW outcomes AS
        SELECT p.run_id, r.source_format, r.model, r.dataset, r.domain, i.split, p.instance_id,
               p.score, p.is_correct, p.output_text,
               i.raw_instance_id, i.perturbation, p.train_trial_index, p.infra_error, r.ingested_at
        FROM predictions p
        JOIN runs r USING (run_id)
        JOIN instances i ON i.run_id = p.run_id AND i.instance_id = p.instance_id;
        """,
    ),
    (
        "002_analysis_tables",
        """
        CREATE TABLE llm_cache (
            cache_key VARCHAR PRIMARY KEY,
            model VARCHAR NOT NULL,
            prompt_version VARCHAR NOT NULL,
            response_text VARCHAR NOT NULL,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            created_at TIMESTAMP NOT NULL
        );
        CREATE SEQUENCE llm_calls_seq;
        CREATE TABLE llm_calls (
            call_id BIGINT PRIMARY KEY DEFAULT nextval('llm_calls_seq'),
            cache_key VARCHAR,
            model VARCHAR NOT NULL,
            purpose VARCHAR NOT NULL,
            status VARCHAR NOT NULL,
            http_status INTEGER,
            error VARCHAR,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            cost_usd DOUBLE,
            latency_ms DOUBLE,
            created_at TIMESTAMP NOT NULL
        );
        CREATE TABLE analyses (
            run_id VARCHAR NOT NULL,
            instance_id VARCHAR NOT NULL,
            train_trial_index INTEGER NOT NULL,
            analyst VARCHAR NOT NULL,
            prompt_version VARCHAR NOT NULL,
            pair_hash VARCHAR NOT NULL,
            error_title VARCHAR NOT NULL,
            error_summary VARCHAR NOT NULL,
            required_criteria JSON,
            cache_key VARCHAR,
            created_at TIMESTAMP NOT NULL
        );
        CREATE TABLE taxonomies (
            taxonomy_version VARCHAR PRIMARY KEY,
            name VARCHAR NOT NULL,
            source VARCHAR NOT NULL,
            categories JSON NOT NULL,
            created_at TIMESTAMP NOT NULL
        );
        CREATE TABLE classifications (
            error_title VARCHAR NOT NULL,
            taxonomy_version VARCHAR NOT NULL,
            classifier VARCHAR NOT NULL,
            category VARCHAR NOT NULL,
            is_fallback BOOLEAN NOT NULL,
            cache_key VARCHAR,
            created_at TIMESTAMP NOT NULL
        );
        CREATE VIEW failures AS
        WITH latest_analysis AS (
            SELECT * FROM analyses
            QUALIFY row_number() OVER (
                PARTITION BY run_id, instance_id, train_trial_index, analyst
                ORDER BY created_at DESC) = 1
        ),
        latest_class AS (
            SELECT * FROM classifications
            QUALIFY row_number() OVER (PARTITION BY error_title ORDER BY created_at DESC) = 1
        )
        SELECT r.model, r.dataset, r.domain, p.instance_id, a.analyst, a.error_title,
               a.error_summary, c.category, c.taxonomy_version,
               p.run_id, p.train_trial_index, c.classifier, a.created_at AS analysed_at
        FROM predictions p
        JOIN runs r USING (run_id)
        JOIN latest_analysis a
          ON a.run_id = p.run_id AND a.instance_id = p.instance_id
         AND a.train_trial_index = p.train_trial_index
        LEFT JOIN latest_class c ON c.error_title = a.error_title
        WHERE p.is_correct = false;
        """,
    ),
    (
        "003_reviews",
        """
        CREATE SEQUENCE reviews_seq;
        CREATE TABLE reviews (
            review_id BIGINT PRIMARY KEY DEFAULT nextval('reviews_seq'),
            run_id VARCHAR NOT NULL,
            instance_id VARCHAR NOT NULL,
            analyst VARCHAR NOT NULL,
            action VARCHAR NOT NULL,
            original_category VARCHAR,
            category VARCHAR,
            note VARCHAR,
            reviewer VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL
        );
        """,
    ),
    (
        "004_run_status",
        """
        ALTER TABLE runs ADD COLUMN status VARCHAR NOT NULL DEFAULT 'complete';
        """,
    ),
    (
        "005_failures_prefer_own_classifier",
        # A title two analysts share may have been classified by both their classifiers: each
        # analysis takes the classification by its own analyst's classifier when there is one
        # (offline analyst: the offline classifier), else the title's latest.
        """
        CREATE OR REPLACE VIEW failures AS
        WITH latest_analysis AS (
            SELECT * FROM analyses
            QUALIFY row_number() OVER (
                PARTITION BY run_id, instance_id, train_trial_index, analyst
                ORDER BY created_at DESC) = 1
        ),
        classified AS (
            SELECT a.run_id, a.instance_id, a.train_trial_index, a.analyst, a.error_title,
                   a.error_summary, a.created_at, c.category, c.taxonomy_version, c.classifier
            FROM latest_analysis a
            LEFT JOIN classifications c ON c.error_title = a.error_title
            QUALIFY row_number() OVER (
                PARTITION BY a.run_id, a.instance_id, a.train_trial_index, a.analyst
                ORDER BY (c.classifier = a.analyst
                          OR (a.analyst = 'offline' AND c.classifier LIKE 'offline/%')) DESC NULLS LAST,
                         c.created_at DESC NULLS LAST) = 1
        )
        SELECT r.model, r.dataset, r.domain, p.instance_id, a.analyst, a.error_title,
               a.error_summary, a.category, a.taxonomy_version,
               p.run_id, p.train_trial_index, a.classifier, a.created_at AS analysed_at
        FROM predictions p
        JOIN runs r USING (run_id)
        JOIN classified a
          ON a.run_id = p.run_id AND a.instance_id = p.instance_id
         AND a.train_trial_index = p.train_trial_index
        WHERE p.is_correct = false;
        """,
    ),
    (
        "006_verdict_provenance",
        # Faithful verdicts: the split and settings that identify a run, the log's own aggregate
        # for the harness-agreement check, the question hash that pairs ids across harnesses,
        # and what kind of output a prediction holds.
        """
        ALTER TABLE runs ADD COLUMN dataset_raw VARCHAR;
        ALTER TABLE runs ADD COLUMN scale_source VARCHAR;
        ALTER TABLE runs ADD COLUMN main_split VARCHAR;
        ALTER TABLE runs ADD COLUMN variant VARCHAR;
        ALTER TABLE runs ADD COLUMN settings JSON;
        ALTER TABLE runs ADD COLUMN harness_metric VARCHAR;
        ALTER TABLE runs ADD COLUMN harness_split VARCHAR;
        ALTER TABLE runs ADD COLUMN harness_value DOUBLE;
        ALTER TABLE runs ADD COLUMN harness_n INTEGER;
        ALTER TABLE runs ADD COLUMN harness_agrees BOOLEAN;
        ALTER TABLE runs ADD COLUMN harness_note VARCHAR;
        ALTER TABLE instances ADD COLUMN question_hash VARCHAR;
        ALTER TABLE predictions ADD COLUMN output_kind VARCHAR;
        """,
    ),
    (
        "007_latest_outcomes",
        # Which prediction is a model's current outcome on a question is decided when a run is
        # written (store/runs.py keeps this table), not by a window over every prediction at each
        # read. A run's variant makes "model · variant" its own model here. The outcomes view
        # gains the variant and whether a row is in its run's main split. failure_labels is the
        # failures view's label rule (005) without the join to predictions, so queries that
        # already hold the outcome join it directly; the classification is picked once per
        # (title, analyst) instead of once per failure.
        """
        CREATE TABLE latest_outcomes (
            model VARCHAR NOT NULL,
            model_name VARCHAR NOT NULL,
            variant VARCHAR,
            dataset VARCHAR NOT NULL,
            domain VARCHAR,
            split VARCHAR,
            is_main_split BOOLEAN NOT NULL,
            instance_id VARCHAR NOT NULL,
            question_hash VARCHAR,
            run_id VARCHAR NOT NULL,
            train_trial_index INTEGER NOT NULL,
            is_correct BOOLEAN NOT NULL
        );
        INSERT INTO latest_outcomes
        SELECT CASE WHEN r.variant IS NULL THEN r.model ELSE r.model || ' · ' || r.variant END
                   AS model_key,
               r.model, r.variant, r.dataset, r.domain, i.split,
               r.main_split IS NULL OR coalesce(i.split = r.main_split, false),
               p.instance_id, i.question_hash, p.run_id, p.train_trial_index, p.is_correct
        FROM predictions p
        JOIN runs r USING (run_id)
        JOIN instances i ON i.run_id = p.run_id AND i.instance_id = p.instance_id
        WHERE p.is_correct IS NOT NULL
        QUALIFY row_number() OVER (
            PARTITION BY model_key, r.dataset, p.instance_id
            ORDER BY r.ingested_at DESC, p.run_id DESC, i.perturbation NULLS FIRST,
                     p.train_trial_index) = 1;
        CREATE VIEW failure_labels AS
        WITH latest_analysis AS (
            SELECT * FROM analyses
            QUALIFY row_number() OVER (
                PARTITION BY run_id, instance_id, train_trial_index, analyst
                ORDER BY created_at DESC) = 1
        ),
        title_class AS (
            SELECT t.error_title, t.analyst, c.category, c.taxonomy_version, c.classifier
            FROM (SELECT DISTINCT error_title, analyst FROM latest_analysis) t
            JOIN classifications c ON c.error_title = t.error_title
            QUALIFY row_number() OVER (
                PARTITION BY t.error_title, t.analyst
                ORDER BY (c.classifier = t.analyst
                          OR (t.analyst = 'offline' AND c.classifier LIKE 'offline/%')) DESC,
                         c.created_at DESC) = 1
        )
        SELECT a.run_id, a.instance_id, a.train_trial_index, a.analyst, a.error_title,
               a.error_summary, a.created_at AS analysed_at, t.category, t.taxonomy_version,
               t.classifier
        FROM latest_analysis a
        LEFT JOIN title_class t ON t.error_title = a.error_title AND t.analyst = a.analyst;
        CREATE OR REPLACE VIEW failures AS
        SELECT r.model, r.dataset, r.domain, p.instance_id, l.analyst, l.error_title,
               l.error_summary, l.category, l.taxonomy_version,
               p.run_id, p.train_trial_index, l.classifier, l.analysed_at
        FROM predictions p
        JOIN runs r USING (run_id)
        JOIN failure_labels l
          ON l.run_id = p.run_id AND l.instance_id = p.instance_id
         AND l.train_trial_index = p.train_trial_index
        WHERE p.is_correct = false;
        CREATE OR REPLACE VIEW outcomes AS
        SELECT p.run_id, r.source_format, r.model, r.dataset, r.domain, i.split, p.instance_id,
               p.score, p.is_correct, p.output_text,
               i.raw_instance_id, i.perturbation, p.train_trial_index, p.infra_error, r.ingested_at,
               r.variant,
               r.main_split IS NULL OR coalesce(i.split = r.main_split, false) AS is_main_split
        FROM predictions p
        JOIN runs r USING (run_id)
        JOIN instances i ON i.run_id = p.run_id AND i.instance_id = p.instance_id;
        """,
    ),
    (
        "008_failure_labels_at_write_time",
        # Each failure's label (latest analysis per analyst, its title's classification) is kept
        # when analyses and classifications are written (store/analysis.py refresh_labels), not
        # recomputed by a window over every analysis at each read: nearly every page query joins
        # it. Filled here from 007's view, whose rule it keeps; the failures view reads it by
        # name, so it now reads the table.
        """
        CREATE TABLE failure_labels_kept AS SELECT * FROM failure_labels;
        DROP VIEW failure_labels;
        ALTER TABLE failure_labels_kept RENAME TO failure_labels;
        """,
    ),
    (
        "009_evidence_and_no_model_error",
        # What the harness knew about each prediction, kept for the analyst and the instance view:
        # the task's instructions and generation limit (per run), the prompt as the model saw it
        # (per instance), the judge's own words, why generation stopped and why a verdict is
        # special (per prediction). An analysis may find that a failure is not the model's fault
        # (`no_model_error` holds why); its label is then `No Model Error`, outside the taxonomy.
        """
        ALTER TABLE runs ADD COLUMN instructions VARCHAR;
        ALTER TABLE runs ADD COLUMN max_tokens INTEGER;
        ALTER TABLE instances ADD COLUMN prompt_text VARCHAR;
        ALTER TABLE predictions ADD COLUMN judge_notes JSON;
        ALTER TABLE predictions ADD COLUMN finish_reason VARCHAR;
        ALTER TABLE predictions ADD COLUMN output_tokens INTEGER;
        ALTER TABLE predictions ADD COLUMN verdict_note VARCHAR;
        ALTER TABLE analyses ADD COLUMN no_model_error VARCHAR;
        ALTER TABLE analyses ADD COLUMN context_note VARCHAR;
        ALTER TABLE failure_labels ADD COLUMN no_model_error VARCHAR;
        """,
    ),
    (
        "010_verdict_rules",
        # How each run was judged, in full: the bottom of the metric's scale (1 for 1–5 jury
        # scores), the harness's own headline metric (to show a run judged on another metric),
        # and the rule in words, as the ingest summary printed it.
        """
        ALTER TABLE runs ADD COLUMN metric_min DOUBLE;
        ALTER TABLE runs ADD COLUMN headline_metric VARCHAR;
        ALTER TABLE runs ADD COLUMN verdict_rule VARCHAR;
        """,
    ),
    (
        "011_verifications",
        # A second LLM's verdict on an analysis (ErrorMap's meta-judge): does it correctly explain
        # its failure? `analysed_at` names the analysis judged (its created_at), so a verdict
        # never passes to a later analysis of the same failure.
        """
        CREATE TABLE verifications (
            run_id VARCHAR NOT NULL,
            instance_id VARCHAR NOT NULL,
            train_trial_index INTEGER NOT NULL,
            analyst VARCHAR NOT NULL,
            analysed_at TIMESTAMP NOT NULL,
            verifier VARCHAR NOT NULL,
            prompt_version VARCHAR NOT NULL,
            accepted BOOLEAN NOT NULL,
            reason VARCHAR,
            cache_key VARCHAR,
            created_at TIMESTAMP NOT NULL
        );
        """,
    ),
    (
        "014_latest_labels",
        # The label of every failed latest outcome, per analyst, kept beside latest_outcomes (by
        # the ingest for the groups it writes, store/runs.py; by the analysis for the labels it
        # changes, store/analysis.py): the pages count failures by category from this table
        # alone instead of joining every outcome to every label at each read (at 10,000,000
        # predictions that join was most of each page's time). Filled from the two tables here.
        """
        CREATE TABLE latest_labels (
            model VARCHAR NOT NULL,
            model_name VARCHAR NOT NULL,
            dataset VARCHAR NOT NULL,
            domain VARCHAR,
            split VARCHAR,
            is_main_split BOOLEAN NOT NULL,
            instance_id VARCHAR NOT NULL,
            run_id VARCHAR NOT NULL,
            train_trial_index INTEGER NOT NULL,
            analyst VARCHAR NOT NULL,
            error_title VARCHAR NOT NULL,
            category VARCHAR,
            taxonomy_version VARCHAR,
            classifier VARCHAR
        );
        INSERT INTO latest_labels
        SELECT o.model, o.model_name, o.dataset, o.domain, o.split, o.is_main_split, o.instance_id,
               o.run_id, o.train_trial_index, f.analyst, f.error_title, f.category,
               f.taxonomy_version, f.classifier
        FROM latest_outcomes o
        JOIN failure_labels f ON f.run_id = o.run_id AND f.instance_id = o.instance_id
                             AND f.train_trial_index = o.train_trial_index
        WHERE NOT o.is_correct
        ORDER BY o.model, o.dataset;
        """,
    ),
    (
        "015_llm_batches",
        # Requests sent through a provider's batch API (taxonomy/batch.py): one row per submitted
        # batch, written before the batch is created so that a run killed at any point can find
        # it again (--resume) instead of paying for its requests twice. A batch line billed
        # becomes an llm_calls row carrying its batch_id.
        """
        CREATE TABLE llm_batches (
            submission_id VARCHAR PRIMARY KEY,
            batch_id VARCHAR,
            input_file_id VARCHAR NOT NULL,
            model VARCHAR NOT NULL,
            provider VARCHAR NOT NULL,
            api_base VARCHAR,
            requests JSON NOT NULL,
            n_requests INTEGER NOT NULL,
            reserved_usd DOUBLE,
            status VARCHAR NOT NULL,
            provider_status VARCHAR,
            submitted_at TIMESTAMP NOT NULL,
            collected_at TIMESTAMP,
            cost_usd DOUBLE
        );
        ALTER TABLE llm_calls ADD COLUMN batch_id VARCHAR;
        """,
    ),
    (
        "016_cut_off_answers_cached",
        # An answer cut off at max_tokens is paid for like any other: it is cached with why it
        # ended ('length'), so that a re-run does not buy it again unless asked (--retry-cut-off)
        # or given a higher --max-tokens. NULL: an answer that ended on its own.
        """
        ALTER TABLE llm_cache ADD COLUMN finish_reason VARCHAR;
        """,
    ),
    (
        "017_reruns_and_model_identity",
        # A model is a model (issue 23): reruns of one model on one task are trials of it, the
        # latest counts (`superseded_by` names the run that counts instead of an earlier one,
        # ordered by `started_at`, the log's own time); a variant names only a setting that
        # changes what the model was asked. Existing runs get both decided again. And the scale the
        # harness prints its headline on (harness_factor), so the headline is computable exactly.
        _reruns_and_model_identity,
    ),
    (
        "018_scores_in_latest",
        # The score beside each latest outcome and each label of a failed one: the harness's own
        # number (a jury mean, an F1) is the mean of these, and the analyst's threshold can be
        # moved in the app without re-ingesting (a label whose outcome passes under the new line
        # is left out, an outcome that newly fails is not analysed yet) — both without joining
        # 10,000,000 outcomes to the predictions at each read. (IF NOT EXISTS: applying it again
        # after a later table was rebuilt without the column is harmless.)
        """
        ALTER TABLE latest_outcomes ADD COLUMN IF NOT EXISTS score DOUBLE;
        UPDATE latest_outcomes SET score = p.score FROM predictions p
        WHERE p.run_id = latest_outcomes.run_id AND p.instance_id = latest_outcomes.instance_id
          AND p.train_trial_index = latest_outcomes.train_trial_index;
        ALTER TABLE latest_labels ADD COLUMN IF NOT EXISTS score DOUBLE;
        UPDATE latest_labels SET score = o.score FROM latest_outcomes o
        WHERE o.run_id = latest_labels.run_id AND o.instance_id = latest_labels.instance_id
          AND o.train_trial_index = latest_labels.train_trial_index;
        """,
    ),
    (
        "019_transcript_steps",
        # Agent logs keep the whole run, not only its last message: one row per step of a
        # prediction's transcript (core/records.py StepRecord), written with its run in the same
        # transaction and replaced with it. Texts are cut at a stated cap, their full length kept.
        """
        CREATE TABLE transcript_steps (
            run_id VARCHAR NOT NULL,
            instance_id VARCHAR NOT NULL,
            train_trial_index INTEGER NOT NULL,
            step_index INTEGER NOT NULL,
            agent VARCHAR,
            role VARCHAR,
            kind VARCHAR NOT NULL,
            tool_name VARCHAR,
            tool_call_id VARCHAR,
            tool_arguments VARCHAR,
            text VARCHAR,
            text_chars BIGINT NOT NULL,
            error VARCHAR,
            input_tokens BIGINT,
            output_tokens BIGINT,
            started_at TIMESTAMP,
            seconds DOUBLE,
            model VARCHAR,
            finish_reason VARCHAR,
            span_id VARCHAR,
            parent_span_id VARCHAR,
            depth INTEGER NOT NULL,
            source_ref VARCHAR
        );
        """,
    ),
    (
        "021_transcript_analyses",
        # The first decisive error of an agent transcript: the analysis names its step (an index
        # into transcript_steps), the agent responsible, a verbatim quote from that step, how many
        # steps the transcript had, which segments of a long transcript were read, and the
        # category it chose itself (transcripts are classified at stage 1, under the agent
        # taxonomy, not by stage 3). People's labels of the same (Who&When: agent, step, reason)
        # are reviews with action 'label', made apart from any analyst (analyst NULL).
        """
        ALTER TABLE analyses ADD COLUMN step_index INTEGER;
        ALTER TABLE analyses ADD COLUMN step_agent VARCHAR;
        ALTER TABLE analyses ADD COLUMN step_quote VARCHAR;
        ALTER TABLE analyses ADD COLUMN n_steps INTEGER;
        ALTER TABLE analyses ADD COLUMN segments_read JSON;
        ALTER TABLE analyses ADD COLUMN category VARCHAR;
        ALTER TABLE analyses ADD COLUMN taxonomy_version VARCHAR;
        ALTER TABLE reviews ADD COLUMN train_trial_index INTEGER;
        ALTER TABLE reviews ADD COLUMN step_index INTEGER;
        ALTER TABLE reviews ADD COLUMN agent VARCHAR;
        ALTER TABLE reviews ALTER COLUMN analyst DROP NOT NULL;
        """,
    ),
    (
        "022_review_samples_and_calibrations",
        # A review sample is a seeded random draw of failures to review, stratified by the
        # analyst's label: each drawn failure keeps its stratum's size and draw count, so an
        # estimate over all failures weighs a review by its stratum (size / drawn). A calibration
        # is one measurement of an analyst against people's labels (taxonomy calibrate), kept with
        # what it is valid for: the analyst, its taxonomy version and prompt, and the reviews it
        # rests on — stale when any of them changes.
        """
        CREATE TABLE review_samples (
            sample_id VARCHAR NOT NULL,
            analyst VARCHAR NOT NULL,
            seed BIGINT NOT NULL,
            run_id VARCHAR NOT NULL,
            instance_id VARCHAR NOT NULL,
            train_trial_index INTEGER NOT NULL,
            stratum VARCHAR NOT NULL,
            stratum_size INTEGER NOT NULL,
            stratum_drawn INTEGER NOT NULL,
            created_at TIMESTAMP NOT NULL
        );
        CREATE TABLE calibrations (
            analyst VARCHAR NOT NULL,
            taxonomy_version VARCHAR,
            prompt_version VARCHAR,
            reviews_hash VARCHAR NOT NULL,
            n_reviews INTEGER NOT NULL,
            report JSON NOT NULL,
            created_at TIMESTAMP NOT NULL
        );
        """,
    ),
    (
        "023_instance_clusters",
        # Questions that are not independent share a cluster (core/clustered.py): given by the
        # user (--map cluster=COLUMN) or found at load (HELM questions on one passage). NULL: the
        # question is its own cluster, and its trials (epochs) cluster by question at read time.
        """
        ALTER TABLE instances ADD COLUMN cluster VARCHAR;
        """,
    ),
]


def applied(con: duckdb.DuckDBPyConnection) -> list[str]:
    # read first: an up-to-date store (the common case, once per write session) is not written to
    try:
        return [r[0] for r in con.execute("SELECT name FROM schema_migrations ORDER BY id").fetchall()]
    except duckdb.CatalogException:
        con.execute(SCHEMA_MIGRATIONS_DDL)
        return []


def refuse_newer(done: list[str], where: str = "the database") -> None:
    """A store a newer Faultline wrote (migrations this one does not know) is refused by readers
    and writers alike: its tables and views may mean what this code does not expect."""
    known = {name for name, _ in MIGRATIONS}
    unknown = [n for n in done if n not in known]
    if unknown:
        # the names are the store's data: only a plain migration name is repeated
        shown = [n if _MIGRATION_NAME.fullmatch(str(n)) else "<not a migration name>" for n in unknown[:5]]
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise StoreError(
            f"{where} has migrations this Faultline does not know ({', '.join(shown)}{more}): a newer "
            "Faultline wrote it; upgrade Faultline"
        )


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply the migrations this database lacks, in order, in one transaction (an upgrade
    either completes or leaves the store as it was); return their names."""
    done = applied(con)
    refuse_newer(done)
    pending = [(i, name, step) for i, (name, step) in enumerate(MIGRATIONS, start=1) if name not in done]
    if not pending:
        return []
    with transaction(con):
        finish: list[Finish] = []
        for i, name, step in pending:
            if isinstance(step, str):
                con.execute(step)
            elif (then := step(con)) is not None:
                finish.append(then)
            con.execute("INSERT INTO schema_migrations VALUES (?, ?, current_localtimestamp())", [i, name])
        for then in finish:
            then(con)
    return [name for _, name, _ in pending]
