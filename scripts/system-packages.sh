#!/usr/bin/env bash
# Installs the Debian packages the test suite drives for real (Redis, Chromium, PostgreSQL, MariaDB, gettext, node) and
# what building mysqlclient needs, when they are missing.
set -euo pipefail
missing=()
[ -x /usr/bin/redis-server ] || missing+=(redis-server)
[ -x /usr/bin/chromium ] || missing+=(chromium)
# The translation tests run makemessages over the app to find strings the catalogs lack (xgettext, msgmerge).
[ -x /usr/bin/xgettext ] || missing+=(gettext)
# The frontend tests run the Vercel AI SDK's own chat client (tests/frontends/js, installed with npm ci) in node.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
# The suite runs its own throwaway cluster with Debian's initdb and postgres (not on PATH); no service is used.
compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null || missing+=(postgresql)
# The same for MariaDB: a server of its own made with mariadb-install-db and mariadbd; Debian's service is not used.
{ [ -x /usr/sbin/mariadbd ] && [ -x /usr/bin/mariadb-install-db ]; } || missing+=(mariadb-server)
# mysqlclient (requirements/mysql.txt) compiles against the C client library, which it finds with pkg-config,
# and against the headers of the Python that makes the virtualenv (Debian's python3 has them in python3-dev).
command -v pkg-config >/dev/null || missing+=(pkg-config)
{ pkg-config --exists mysqlclient || pkg-config --exists libmariadb; } 2>/dev/null || missing+=(default-libmysqlclient-dev)
command -v cc >/dev/null || missing+=(gcc)
python3 -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(sysconfig.get_paths()["include"] + "/Python.h"))' \
  || missing+=(python3-dev)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "Missing Debian packages: ${missing[*]}. Install them (apt-get install ${missing[*]}) or run as root." >&2
  exit 1
fi
echo "Installing ${missing[*]} from Debian's packages ..."
export DEBIAN_FRONTEND=noninteractive
# A mirror can fail for a moment; try a few times before giving up.
for attempt in 1 2 3; do
  if apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null; then
    exit 0
  fi
  echo "apt-get failed (attempt $attempt); retrying ..." >&2
  sleep $((attempt * 5))
done
exit 1
