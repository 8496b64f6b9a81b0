"""Issue 37, item 1: the attacks on the log replayed as the application login (podledger_app).

Each was run against main before migration 0024 and succeeded there: a temporary table named
``event_keys`` (with a trigger on it) made the SECURITY DEFINER trigger function write there, or
run the trigger, as the owner; a second ``PodCreated`` for an existing stream at version 1 with a
correct chain link passed every check and was signed; one row with a bad ``prev_hash`` stopped
every later checkpoint. Now each is refused by the database, leaves no row, and the log still
verifies and signs afterwards.
"""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from ledger.verify import verify_chain

from ._forge import app_conn, cli, forge, head, stored, su_conn
from .conftest import apply_text, event_count, nodes_yaml, pod_yaml

EVIL = "podledger-forged"  # the name of what the attacker tries to create as the owner


def _ledger(database) -> None:  # type: ignore[no-untyped-def]
    apply_text(database, nodes_yaml(2) + "---\n" + pod_yaml("p0") + "---\n" + pod_yaml("p1"))


def _evil_pod(conn: psycopg.Connection) -> tuple[dict, dict]:
    """The stored PodCreated of p0 with image `evil`, claimed by the scheduler."""
    ev = stored(conn, "pod/default/p0")
    ev["data"]["object"]["spec"]["containers"][0]["image"] = "evil"
    return ev["data"], {"actor": "scheduler"}


def _untouched(db_url: str, database, n: int) -> None:  # type: ignore[no-untyped-def]
    """Nothing was appended, the chain verifies, a checkpoint signs, nothing of the owner's
    was created or switched off."""
    assert event_count(database) == n
    assert verify_chain(database).ok
    with su_conn(db_url) as su:
        assert su.execute("SELECT count(*) FROM event_keys").fetchone() == (n,)
        assert su.execute("SELECT count(*) FROM pg_proc WHERE proname = %s", (EVIL,)).fetchone() == (0,)
        enabled = su.execute(
            "SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'events'::regclass AND NOT tgisinternal"
        ).fetchall()
        assert enabled and all(state == "O" for _, state in enabled), enabled


def test_app_login_cannot_create_temporary_objects_and_definers_pin_search_path(database, db_url):
    with app_conn(db_url) as app:
        for sql in ("CREATE TEMP TABLE event_keys (x int)", "CREATE TEMP VIEW events AS SELECT 1 AS x"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="temporary"):
                app.execute(sql)
    with su_conn(db_url) as su:
        reporting = su.execute(
            "SELECT has_database_privilege('podledger_reporting', current_database(), 'TEMP'), "
            "has_database_privilege('podledger_app', current_database(), 'TEMP'), "
            "has_schema_privilege('podledger_app', 'public', 'CREATE')"
        ).fetchone()
        assert reporting == (False, False, False)
        definers = su.execute(
            "SELECT p.oid::regprocedure::text, p.proconfig FROM pg_proc p "
            "WHERE p.prosecdef AND p.pronamespace = 'public'::regnamespace ORDER BY 1"
        ).fetchall()
    names = {name.split("(")[0] for name, _ in definers}
    assert {"ledger_record_event_keys", "ledger_ensure_partitions", "ledger_extend_tree"} <= names
    assert "ledger_store_checkpoint" in names
    for name, config in definers:
        assert "search_path=public, pg_temp" in (config or []), (name, config)
    rc, out = cli(db_url, "db", "roles")
    assert rc == 0, out
    # a database restored or cloned without its database-level privileges is named
    with su_conn(db_url) as su:
        su.execute(
            "DO $$ BEGIN EXECUTE format('GRANT TEMP ON DATABASE %I TO PUBLIC', current_database()); END $$"
        )
    rc, out = cli(db_url, "db", "roles")
    assert rc == 1 and "podledger_app may create temporary objects" in out, out


@pytest.mark.parametrize("with_trigger", [False, True], ids=["table", "table+trigger"])
def test_temporary_table_does_not_hijack_the_definer_functions(database, db_url, with_trigger, tmp_path):
    """TEMP granted again (a restore that lost the revoke): a temporary ``event_keys`` (with a
    trigger that would run as the owner) and ``events`` are never what the owner's functions use."""
    _ledger(database)
    n = event_count(database)
    with su_conn(db_url) as su:
        su.execute(
            "DO $$ BEGIN EXECUTE format('GRANT TEMP ON DATABASE %I TO podledger_app', current_database()); END $$"
        )
    with app_conn(db_url) as app:
        app.execute("CREATE TEMP TABLE event_keys (event_id uuid, stream text, version int, position bigint)")
        if with_trigger:
            app.execute(
                f"""CREATE FUNCTION pg_temp.backdoor() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                  EXECUTE 'CREATE FUNCTION public."{EVIL}"() RETURNS int LANGUAGE sql AS ''SELECT 1''';
                  EXECUTE 'ALTER TABLE public.events DISABLE TRIGGER events_no_update';
                  RETURN NEW;
                END $$"""
            )
            app.execute(
                "CREATE TRIGGER backdoor BEFORE INSERT ON pg_temp.event_keys "
                "FOR EACH ROW EXECUTE FUNCTION pg_temp.backdoor()"
            )
        # the duplicate PodCreated of the issue: version 1 again, a correct chain link
        data, meta = _evil_pod(app)
        with pytest.raises(psycopg.errors.UniqueViolation) as exc:
            forge(app, "pod/default/p0", 1, "PodCreated", data, meta)
        assert exc.value.diag.constraint_name == "events_stream_version_key"
        # a valid append in the same session still goes to the real event_keys, never the
        # temporary one, and runs nothing of the attacker's as the owner
        forge(app, "note/attacker", 1, "NoteRecorded", {"text": "hello"})
        assert app.execute("SELECT count(*) FROM pg_temp.event_keys").fetchone() == (0,)
        # partition maintenance (SECURITY DEFINER, callable by the app) ignores a temporary events
        app.execute("CREATE TEMP TABLE events (position bigint, hash bytea)")
        app.execute("INSERT INTO pg_temp.events VALUES (999999999, '\\x00')")
        assert app.execute("SELECT * FROM ledger_ensure_partitions()").fetchall() == []
    _untouched(db_url, database, n + 1)
    rc, out = cli(db_url, "checkpoint", "--new-key", env={"PODLEDGER_CHECKPOINT_KEY": str(tmp_path / "k")})
    assert rc == 0, out


def test_forged_history_is_refused_at_insert_time(database, db_url):
    _ledger(database)
    n = event_count(database)
    with app_conn(db_url) as app:
        data, meta = _evil_pod(app)
        pos, h = head(app)
        refused = [
            # a duplicate version of an existing stream, correct link
            ("pod/default/p0", 1, {}, psycopg.errors.UniqueViolation, "events_stream_version_key"),
            # a gap in the stream's versions (p0 is at version 1)
            ("pod/default/p0", 3, {}, psycopg.errors.CheckViolation, "neither 1 nor the successor"),
            # a new stream that does not start at 1
            ("pod/default/ghost", 2, {}, psycopg.errors.CheckViolation, "neither 1 nor the successor"),
            ("pod/default/ghost", 0, {}, psycopg.errors.CheckViolation, "events_version_positive"),
            # a bad chain link: the hash of an older event, or garbage
            ("pod/default/p2", 1, {"prev": b"\x01" * 32}, psycopg.errors.CheckViolation, "prev_hash is not"),
            ("pod/default/p2", 1, {"prev": b"\x00" * 32}, psycopg.errors.CheckViolation, "prev_hash is not"),
            # recorded_at chosen by the app: three days ago, or tomorrow
            ("pod/default/p2", 1, {"recorded": "past"}, psycopg.errors.CheckViolation, "recorded_at"),
            ("pod/default/p2", 1, {"recorded": "future"}, psycopg.errors.CheckViolation, "recorded_at"),
        ]
        now = app.execute("SELECT now()").fetchone()[0]
        for stream, version, kw, error, text in refused:
            if kw.get("recorded") == "past":
                kw = {"recorded": now - timedelta(days=3)}
            elif kw.get("recorded") == "future":
                kw = {"recorded": now + timedelta(days=1)}
            for copy in (False, True):  # INSERT and the batched append's COPY
                with pytest.raises(error) as exc:
                    forge(app, stream, version, "PodCreated", data, meta, copy=copy, **kw)
                assert text in (exc.value.diag.constraint_name or str(exc.value)), (
                    stream,
                    version,
                    kw,
                    exc.value,
                )
        # the app may not choose a position (nor slip a row before the head) or a transaction id
        for column, value in (("position", pos + 1000), ("position", pos), ("tx_id", "1")):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"):
                app.execute(
                    f"INSERT INTO events (stream, version, type, event_id, data, effective_at, recorded_at, "
                    f"prev_hash, hash, {column}) OVERRIDING SYSTEM VALUE "
                    f"VALUES ('x', 1, 'X', gen_random_uuid(), '{{}}', now(), now(), %s, %s, %s)",
                    (h, h, value),
                )
        assert head(app) == (pos, h)
    _untouched(db_url, database, n)


def test_a_bad_link_only_a_superuser_can_store_is_found_by_verify(database, db_url):
    """Only a superuser (triggers off) can store a bad link; verify names that row, and the
    appends after it go on (they chain to the row as stored)."""
    _ledger(database)
    with su_conn(db_url) as su:
        su.execute("SET session_replication_role = replica")
        data, meta = _evil_pod(su)
        forge(su, "pod/default/evil", 1, "PodCreated", data, meta, prev=b"\x02" * 32)
        bad = head(su)[0]
    res = verify_chain(database)
    assert not res.ok and res.first_bad_position == bad
    with app_conn(db_url) as app:  # a correct link to the bad row: still the bad row's chain
        forge(app, "note/after", 1, "NoteRecorded", {"text": "after"})
    assert verify_chain(database).first_bad_position == bad
