"""docker-compose.yml, the Dockerfile and Grafana's provisioning, checked without Docker:
the services, their commands and health checks, and that every provisioned file parses. The
dashboard's SQL runs against a real migrated database as the reporting role, and the health
check script is run against a real database and a real server."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
GRAFANA = ROOT / "deploy" / "grafana"
VIEWS = (
    "v_group_wait_times",
    "v_unschedulable_reasons",
    "v_preemptions",
    "v_node_utilization",
    "v_quota_usage",
)


@pytest.fixture(scope="module")
def compose() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load(COMPOSE.read_text())


def command(service: dict) -> list[str]:  # type: ignore[type-arg]
    cmd = service["command"]
    return cmd if isinstance(cmd, list) else cmd.split()


def test_services_commands_and_dependencies(compose):
    services = compose["services"]
    assert set(services) == {"postgres", "migrate", "api", "worker", "grafana", "attach"}
    assert services["postgres"]["image"].startswith("postgres:")
    for name in ("migrate", "api", "worker"):  # one image, built from the one Dockerfile
        assert services[name]["build"] == "." and services[name]["image"] == "podledger:local"
        url = services[name]["environment"]["PODLEDGER_DATABASE_URL"]
        assert url.startswith("postgresql://") and url.endswith("@postgres:5432/podledger")
    assert command(services["migrate"]) == ["podledger", "db", "upgrade"]
    assert services["migrate"]["restart"] == "no"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    api = command(services["api"])
    assert api[:2] == ["podledger", "serve"] and api[api.index("--host") + 1] == "0.0.0.0"
    assert "--insecure-local" not in api
    assert "PODLEDGER_TOKENS" in services["api"]["environment"]
    assert command(services["worker"]) == ["podledger", "worker"]
    for name in ("api", "worker", "grafana"):
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"


def test_every_long_running_service_has_a_health_check(compose):
    services = compose["services"]
    for name in ("postgres", "api", "worker", "grafana"):
        hc = services[name]["healthcheck"]
        assert hc["test"][0] in ("CMD", "CMD-SHELL") and len(hc["test"]) > 1
        assert "interval" in hc and "retries" in hc
    assert "pg_isready" in services["postgres"]["healthcheck"]["test"][1]
    assert services["api"]["healthcheck"]["test"][1:] == ["python", "deploy/healthcheck.py", "api"]
    assert services["worker"]["healthcheck"]["test"][1:] == ["python", "deploy/healthcheck.py", "worker"]
    assert "/api/health" in services["grafana"]["healthcheck"]["test"][1]


def test_mounted_files_exist(compose):
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            src = volume.split(":")[0]
            if src.startswith("./"):
                assert (ROOT / src).exists(), f"{name} mounts missing {src}"
    init = ROOT / "deploy" / "postgres" / "10-roles.sh"
    text = init.read_text()
    assert init.stat().st_mode & 0o111 and "podledger_reporting LOGIN" in text
    assert "CREATE ROLE podledger_app LOGIN NOSUPERUSER" in text and "OWNER podledger" in text


def test_api_and_worker_log_in_as_the_application_role(compose):
    services = compose["services"]
    assert services["postgres"]["environment"]["POSTGRES_USER"] != "podledger"  # owner is no superuser
    for name in ("api", "worker"):
        env = services[name]["environment"]
        for var in ("PODLEDGER_DATABASE_URL", "PODLEDGER_APP_DATABASE_URL"):
            assert env[var].startswith("postgresql://podledger_app:") and env[var].endswith(
                "@postgres:5432/podledger"
            )


def _env_texts(service: dict) -> list[str]:  # type: ignore[type-arg]
    env = service.get("environment", {})
    values = env.values() if isinstance(env, dict) else env
    return [str(v) for v in values] + [str(service.get("command", ""))]


def test_only_migrate_has_the_owner_url(compose):
    """The owner (DDL, the migrations) is given to the one-shot migrate service alone."""
    owner = re.compile(r"postgres(ql)?://podledger:")
    holders = [
        name for name, svc in compose["services"].items() if any(owner.search(t) for t in _env_texts(svc))
    ]
    assert holders == ["migrate"]
    assert compose["services"]["migrate"]["restart"] == "no"
    assert "POSTGRES_PASSWORD" in compose["services"]["migrate"]["environment"]["PODLEDGER_DATABASE_URL"]


def test_no_password_has_a_default(compose):
    """Every password (and the tokens) is required: ``${VAR:?message}``, never ``${VAR:-default}``
    or a literal; Grafana's admin password too."""
    text = COMPOSE.read_text()
    refs = re.findall(r"\$\{([A-Z0-9_]+)(:?[-?+]?)([^}]*)\}", text)
    secret = re.compile(r"PASSWORD|TOKENS|SECRET")
    secrets = [(name, op, rest) for name, op, rest in refs if secret.search(name)]
    assert {n for n, _, _ in secrets} >= {
        "POSTGRES_SUPERUSER_PASSWORD",
        "POSTGRES_PASSWORD",
        "PODLEDGER_APP_PASSWORD",
        "PODLEDGER_REPORTING_PASSWORD",
        "GRAFANA_ADMIN_PASSWORD",
        "PODLEDGER_TOKENS",
    }
    for name, op, rest in secrets:
        assert op == ":?" and rest.strip(), f"${{{name}{op}{rest}}} has a default or no message"
    for svc_name, svc in compose["services"].items():
        env = svc.get("environment", {})
        for key, value in env.items() if isinstance(env, dict) else []:
            if secret.search(key):
                assert "${" in str(value), f"{svc_name}: {key} is a literal"
            for m in re.finditer(r"postgres(?:ql)?://[^:/@]+:([^@]*)@", str(value)):
                assert m.group(1).startswith("${") and ":?" in m.group(1), (
                    f"{svc_name}: {key} has a literal password"
                )
    assert compose["services"]["grafana"]["environment"]["GF_SECURITY_ADMIN_PASSWORD"].startswith(
        "${GRAFANA_ADMIN_PASSWORD:?"
    )


def test_the_signing_key_is_in_the_worker_alone(compose):
    for name, svc in compose["services"].items():
        mounts = [v for v in svc.get("volumes", []) if "keys" in v]
        has_key = "PODLEDGER_CHECKPOINT_KEY" in (svc.get("environment") or {})
        assert (bool(mounts) or has_key) == (name == "worker"), name
    assert compose["services"]["worker"]["environment"]["PODLEDGER_CHECKPOINT_KEY"] == "/keys/checkpoint.key"


@pytest.mark.timeout(120)
def test_api_runs_with_the_application_url_only(db_url, tmp_path):
    """What compose gives the api: PODLEDGER_DATABASE_URL and PODLEDGER_APP_DATABASE_URL both the
    application login (after migrate ran): it starts, is ready, and writes, with no owner URL."""
    import os
    import socket
    import time

    import httpx

    from ledger import db
    from tests.http.conftest import TOKEN_SPEC, TOKENS
    from tests.reliability.conftest import PODLEDGER

    app_url = db.with_login(db_url, "podledger_app", None)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODLEDGER_")}
    env.update(
        PODLEDGER_DATABASE_URL=app_url, PODLEDGER_APP_DATABASE_URL=app_url, PODLEDGER_TOKENS=TOKEN_SPEC
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [PODLEDGER, "serve", "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, env=env
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                r = httpx.get(f"{base}/readyz", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, (
                    tmp_path / "serve.log"
                ).read_text()
                time.sleep(0.1)
        assert r.status_code == 200 and r.json()["checks"]["writes"] == "ok", r.text
        node = '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}'
        r = httpx.post(
            f"{base}/podledger/v1/apply",
            content=node,
            headers={"Authorization": f"Bearer {TOKENS['writer']}", "Content-Type": "application/json"},
            timeout=30,
        )
        assert r.status_code == 200, r.text
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def test_dockerfile_builds_the_console_script():
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11", text, re.M)
    assert "pip install -e ." in text and re.search(r"^USER ", text, re.M)
    for path in ("migrations", "alembic", "ledger", "scheduler", "api", "deploy"):
        assert f"COPY {path} " in text
    assert ".venv" in (ROOT / ".dockerignore").read_text()


def test_grafana_datasource_uses_the_reporting_role():
    doc = yaml.safe_load((GRAFANA / "provisioning" / "datasources" / "podledger.yaml").read_text())
    (ds,) = doc["datasources"]
    assert ds["type"] == "grafana-postgresql-datasource" and ds["url"] == "postgres:5432"
    assert ds["user"] == "podledger_reporting" and ds["jsonData"]["database"] == "podledger"
    assert ds["secureJsonData"]["password"] == "${PODLEDGER_REPORTING_PASSWORD}"
    prov = yaml.safe_load((GRAFANA / "provisioning" / "dashboards" / "podledger.yaml").read_text())
    assert prov["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards"


def _dashboard() -> dict:  # type: ignore[type-arg]
    return json.loads((GRAFANA / "dashboards" / "podledger.json").read_text())


def test_grafana_dashboard_is_built_on_the_views():
    dash = _dashboard()
    assert dash["uid"] and dash["panels"]
    sql = "\n".join(t["rawSql"] for p in dash["panels"] for t in p["targets"])
    for view in VIEWS:
        assert view in sql, view
        assert (ROOT / "migrations" / "sql" / f"{view}.sql").exists(), (
            f"{view} is not defined in migrations/sql"
        )
    ds_uid = yaml.safe_load((GRAFANA / "provisioning" / "datasources" / "podledger.yaml").read_text())[
        "datasources"
    ][0]["uid"]
    # every panel reads the datasource the `cluster` variable picks (one per cluster), whose default
    # is the provisioned podledger datasource
    assert {p["datasource"]["uid"] for p in dash["panels"]} == {"${cluster}"}
    (cluster,) = [v for v in dash["templating"]["list"] if v["name"] == "cluster"]
    assert cluster["type"] == "datasource" and cluster["current"]["value"] == ds_uid
    assert len({p["id"] for p in dash["panels"]}) == len(dash["panels"])


def _expand_macros(sql: str, variables: dict[str, list[str]] | None = None) -> str:
    """The panel's SQL as Grafana sends it: time macros over the last 30 days, and each multi-value
    template variable set to All (Grafana's quoted, comma-separated list of the variable's values)."""
    for name, values in sorted((variables or {}).items(), key=lambda kv: -len(kv[0])):
        quoted = ",".join("'" + v.replace("'", "''") + "'" for v in values) or "NULL"
        sql = re.sub(r"\$\{?" + name + r"\}?(?!\w)", quoted, sql)
    sql = re.sub(r"\$__timeFrom\(\)", "(now() - interval '30 days')", sql)
    sql = re.sub(r"\$__timeTo\(\)", "(now() + interval '1 day')", sql)
    sql = re.sub(
        r"\$__timeFilter\((\w+)\)", r"\1 BETWEEN now() - interval '30 days' AND now() + interval '1 day'", sql
    )
    sql = re.sub(
        r"\$__timeGroupAlias\((\w+),\s*'1h'\)", lambda m: f"date_trunc('hour', {m.group(1)}) AS \"time\"", sql
    )
    assert "$__" not in sql, sql
    return sql


def test_grafana_queries_run_as_the_reporting_role(db_url, database):
    from tests.http.conftest import load_demo

    load_demo(database)
    with psycopg.connect(db_url) as conn:
        conn.execute("SET ROLE podledger_reporting")
        dash = _dashboard()
        variables = {
            v["name"]: [str(r[0]) for r in conn.execute(v["query"]).fetchall() if r[0] is not None]
            for v in dash["templating"]["list"]
            if v["type"] == "query"
        }
        assert variables["namespace"], "the namespace variable lists the demo's namespaces"
        for panel in dash["panels"]:
            for t in panel["targets"]:
                rows = conn.execute(_expand_macros(t["rawSql"], variables)).fetchall()
                if panel["title"] in ("Group wait time distribution", "Slowest groups"):
                    assert len(rows) == 8, panel["title"]  # 6 example groups, the example Job's group + giant
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM events LIMIT 1")


def test_health_check_script(db_url):
    script = str(ROOT / "deploy" / "healthcheck.py")
    env = {"PODLEDGER_DATABASE_URL": db_url, "PATH": "/usr/bin:/bin"}
    no_leader = subprocess.run([sys.executable, script, "worker"], env=env, capture_output=True, text=True)
    assert no_leader.returncode == 1 and "leader lock" in no_leader.stderr
    with psycopg.connect(db_url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(7243150010)")
        assert subprocess.run([sys.executable, script, "worker"], env=env).returncode == 0
    from scheduler.edge.worker import LEADER_LOCK

    assert LEADER_LOCK == 7243150010
    down = subprocess.run(
        [sys.executable, script, "api"], env={**env, "PORT": "1"}, capture_output=True, text=True
    )
    assert down.returncode == 1 and "/readyz" in down.stderr
    assert subprocess.run([sys.executable, script, "bogus"], env=env, capture_output=True).returncode == 2
