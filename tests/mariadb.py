"""A private MariaDB server for a test run: its own data directory, a free port on 127.0.0.1 and a socket."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.services import unavailable, wait_until

# The account the test site connects with (a site's own, not root); the server is thrown away: the password is public.
MARIADB_USER = "toolcalling"
MARIADB_PASSWORD = "toolcalling"
# A site's usual choice: full Unicode (emoji, every script) in every table, compared by the Unicode rules.
CHARSET, COLLATION = "utf8mb4", "utf8mb4_unicode_ci"


def mariadb_binaries() -> tuple[Path, Path] | None:
    """``mariadbd`` (Debian puts it in /usr/sbin, often not on PATH) and ``mariadb-install-db``, or None."""
    server = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
    install_db = shutil.which("mariadb-install-db") or "/usr/bin/mariadb-install-db"
    if os.access(server, os.X_OK) and os.access(install_db, os.X_OK):
        return Path(server), Path(install_db)
    return None


def _run_as(directory: Path) -> dict[str, Any]:
    """mariadbd refuses to run as root: as root, it and its installer run as Debian's ``mysql`` user,
    which then owns ``directory``. Otherwise they run as whoever runs the tests."""
    if os.geteuid() != 0:
        return {}
    try:
        account = pwd.getpwnam("mysql")
    except KeyError:
        unavailable("there is no mysql user to run MariaDB as (apt-get install -y mariadb-server)")
    os.chown(directory, account.pw_uid, account.pw_gid)
    # The mysql user must reach its directory through this run's (root-only) one: traversal, no listing.
    os.chmod(directory.parent, os.stat(directory.parent).st_mode | 0o111)
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


@contextmanager
def mariadb_server(directory: Path, port: int, *, durable: bool = False) -> Iterator[Path]:
    """A private MariaDB server with its data in ``directory`` (made here), listening on 127.0.0.1:``port``
    and on a socket there, with the account ``MARIADB_USER`` allowed everything (it creates the test database).

    No durability (InnoDB's log is not flushed at each commit, no doublewrite), since the server is thrown
    away, unless ``durable``. ``--no-defaults``: the machine's /etc/mysql settings never reach it. Yields
    the socket's path.
    """
    binaries = mariadb_binaries()
    if binaries is None:
        unavailable("MariaDB is not installed (apt-get install -y mariadb-server)")
    server, install_db = binaries
    directory.mkdir()
    run_as = _run_as(directory)
    data, socket, log = directory / "data", directory / "mysqld.sock", directory / "mariadb.log"
    # Run at every start, before the server accepts connections; the installer's bootstrap cannot create users.
    init = directory / "init.sql"
    init.write_text(
        f"CREATE USER IF NOT EXISTS '{MARIADB_USER}'@'%' IDENTIFIED BY '{MARIADB_PASSWORD}';\n"
        f"GRANT ALL PRIVILEGES ON *.* TO '{MARIADB_USER}'@'%';\n"
    )
    os.chmod(init, 0o644)
    installed = subprocess.run(
        [str(install_db), "--no-defaults", f"--datadir={data}", "--auth-root-authentication-method=normal"]
        + ["--skip-test-db", "--skip-name-resolve", "--innodb-log-file-size=16M"],
        cwd=directory,
        capture_output=True,
        text=True,
        **run_as,
    )
    if installed.returncode != 0:
        raise RuntimeError(f"mariadb-install-db failed:\n{installed.stdout}{installed.stderr}")
    options = [f"--datadir={data}", f"--socket={socket}", f"--port={port}", "--bind-address=127.0.0.1"]
    options += [f"--pid-file={directory / 'mariadbd.pid'}", f"--init-file={init}", "--skip-name-resolve"]
    options += [f"--character-set-server={CHARSET}", f"--collation-server={COLLATION}"]
    options += ["--innodb-log-file-size=16M"]
    options += ["--max-connections=200"]  # live servers, turn threads and Celery workers each hold one
    if not durable:
        options += ["--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0"]
    process = subprocess.Popen(
        [str(server), "--no-defaults", *options],
        cwd=directory,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        **run_as,
    )

    def ready() -> bool:
        import MySQLdb

        if process.poll() is not None:
            raise RuntimeError(f"mariadbd exited: {log.read_text()}")
        try:
            # Over TCP, as the test site connects: ready once the port is the server's and the account exists.
            MySQLdb.connect(
                host="127.0.0.1", port=port, user=MARIADB_USER, password=MARIADB_PASSWORD, connect_timeout=5
            ).close()
            return True
        except MySQLdb.OperationalError:
            return False

    try:
        wait_until(ready, timeout=60, what="mariadbd")
        yield socket
    finally:
        process.send_signal(signal.SIGTERM)  # a normal shutdown: clients are disconnected
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
