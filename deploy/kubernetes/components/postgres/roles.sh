#!/bin/sh
# First start of the compose PostgreSQL (run as the superuser, which nothing else uses):
# - podledger: the owner. Logs in for the migrations, owns the database and its tables; no
#   superuser (CREATEROLE only so that the migrations' role statements may run);
# - podledger_app: the API server's and the worker's login (the migrations grant it SELECT and
#   INSERT on the log, nothing more);
# - podledger_reporting: Grafana's login (the migrations grant it SELECT on the reporting views).
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v owner_pw="$PODLEDGER_OWNER_PASSWORD" -v app_pw="$PODLEDGER_APP_PASSWORD" \
  -v reporting_pw="$PODLEDGER_REPORTING_PASSWORD" <<'SQL'
CREATE ROLE podledger LOGIN CREATEROLE NOSUPERUSER NOCREATEDB PASSWORD :'owner_pw';
CREATE ROLE podledger_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'app_pw';
CREATE ROLE podledger_reporting LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'reporting_pw';
CREATE DATABASE podledger OWNER podledger;
SQL
