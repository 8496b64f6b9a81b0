#!/bin/sh
# First start of the compose PostgreSQL: a login for the reporting role that Grafana uses.
# The migrations create podledger_reporting only if it does not exist and grant it SELECT on
# the reporting views (and nothing else), so Grafana can read the views and not the log.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v pw="$PODLEDGER_REPORTING_PASSWORD" <<'SQL'
CREATE ROLE podledger_reporting LOGIN PASSWORD :'pw';
SQL
