"""The hook's fast path: hand the payload to a warm per-user daemon over a unix socket.

Claude Code starts a new process for every hook call, and building planguard (pydantic config models,
phase rules, detectors, policies) costs about half a second. So the hook process only reads its payload,
sends it to a daemon that keeps the :class:`~planguard.guard.Guard` built (``planguard_hooks.daemon``)
and prints the daemon's answer. This module imports nothing but the standard library's cheapest parts
(``_socket``, ``zlib``, ``os``, ``sys``, ``time``); ``planguard install claude-code`` runs it (through the
few lines of ``launch.py``) with ``python -S`` so that even the ``site`` start-up (``.pth`` files) is
skipped.

* The first call starts the daemon (detached, its own session, standard streams on ``/dev/null``) and hands
  it an ``flock`` on ``cc-<key>.lock``: the lock is held for exactly as long as a daemon lives, so however
  many hook processes start at once, one daemon starts and the others wait for its socket.
* Anything wrong — no daemon listening or no answer within the timeout, a daemon that dies, a socket
  directory that is not private — and the call runs in-process exactly as without a daemon
  (fail-open, exit 0). Every request carries a random id that the session state remembers with its answer,
  so a call the daemon did finish after the client gave up is not applied twice.
* One daemon per state directory, project directory (``$CLAUDE_PROJECT_DIR``, else the working directory:
  relative paths in the config resolve against it) and planguard environment (``PLANGUARD_*``, ``OTEL_*``,
  proxies): a hook process is only ever answered by a daemon that would behave as it would itself.
* The socket lives in a private directory (mode 0700, owned by the user): ``$XDG_RUNTIME_DIR/planguard``,
  else ``<state dir>/run``.

When planguard itself cannot answer (it cannot be imported, or fails past its own error handling), the
call is let through with a one-line ``systemMessage`` the CLI shows the user; with ``--fail-closed``
(written by ``planguard install`` for a config with a fail-closed gate) or ``PLANGUARD_FAIL_CLOSED_GATES``
a call about to run is blocked instead by the CLIs' shared blocking contract: the reason on standard error
and exit status 2 (Claude Code, Codex CLI and Gemini CLI hooks; planguard's OpenCode plugin throws it).

``PLANGUARD_HOOK_DAEMON=0`` (or ``--no-daemon``) turns the daemon off; ``PLANGUARD_HOOK_DAEMON_IDLE_S``
(default 600) is how long an unused daemon lives; ``PLANGUARD_HOOK_DAEMON_TIMEOUT_S`` (default 10) how long
a hook waits for a daemon to listen, and then for its answer, before it answers itself.
"""

from __future__ import annotations

# The C module the public ``socket`` wraps: importing ``socket`` (its enums, selectors, io) costs a
# hook call about as many instructions as the rest of the client (bench_hook.py --instructions).
import _socket
import os
import sys
import time

if __name__ == "__main__":
    # Run as a script (``python -S .../client.py``): Python put this package's folder first on sys.path,
    # where its modules would shadow top-level ones of the same name. Nothing here needs it.
    _here = os.path.dirname(os.path.realpath(__file__))
    if sys.path and os.path.realpath(sys.path[0] or ".") == _here:
        del sys.path[0]

TYPE_CHECKING = False  # typing itself costs milliseconds to import; mypy reads this name as usual
if TYPE_CHECKING:
    from subprocess import Popen
    from typing import IO, Any

__all__ = [
    "DEFAULT_IDLE_S",
    "DEFAULT_TIMEOUT_S",
    "ENV_DAEMON",
    "ENV_IDLE",
    "ENV_TIMEOUT",
    "ENV_WATCH",
    "DaemonAddress",
    "Unavailable",
    "cli",
    "daemon_enabled",
    "daemon_status",
    "default_state_dir",
    "locate",
    "main",
    "stop_daemons",
]

ENV_DAEMON = "PLANGUARD_HOOK_DAEMON"
ENV_IDLE = "PLANGUARD_HOOK_DAEMON_IDLE_S"
ENV_TIMEOUT = "PLANGUARD_HOOK_DAEMON_TIMEOUT_S"
ENV_WATCH = "PLANGUARD_HOOK_DAEMON_WATCH"
DEFAULT_IDLE_S = 600.0
DEFAULT_TIMEOUT_S = 10.0
#: After a daemon failed to start, hooks answer in-process for this long before trying again.
FAILED_BACKOFF_S = 60.0
PROTOCOL = b"PGH1"
#: Longest socket path the kernel takes (``sun_path`` is 108 bytes with its NUL on Linux, 104 on BSDs).
MAX_SOCKET_PATH = 103
_KEYED = ("PLANGUARD_", "OTEL_")
_KEYED_EXACT = frozenset(
    {
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "ALL_PROXY",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "PYTHONPATH",
    }
)
_OFF = frozenset({"0", "off", "false", "no", "disable", "disabled"})
_ON = frozenset({"1", "on", "true", "yes"})
#: Exit status that blocks the call in every CLI's hook contract (its reason on standard error).
BLOCK_STATUS = 2
#: The event a CLI's hook payload names before a tool runs (the dialects' ``gate_mark``; this module
#: imports no planguard, which may be what failed to load).
TOOL_START_EVENT = {"gemini": "BeforeTool"}
DEFAULT_TOOL_START_EVENT = "PreToolUse"
#: The other events planguard registers, per CLI (``planguard_hooks.dialects``' ``events``).
OTHER_EVENTS = {
    "gemini": ("AfterTool", "BeforeAgent", "SessionEnd"),
    "codex": ("PostToolUse", "UserPromptSubmit", "SessionEnd"),
}
DEFAULT_OTHER_EVENTS = ("PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "SessionEnd")


# --------------------------------------------------------------------------- where things are


def default_state_dir(environ: Any = None) -> str:
    """``$PLANGUARD_STATE_DIR``, else ``$XDG_STATE_HOME/planguard/hooks`` (``~/.local/state/...``) — or
    ``…/planguard/claude-code``, where earlier versions kept it, while that one exists and the new one does
    not: sessions begun before an upgrade go on in their files."""
    env = os.environ if environ is None else environ
    explicit = env.get("PLANGUARD_STATE_DIR")
    if explicit:
        return os.path.expanduser(explicit)
    base = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    current = os.path.join(base, "planguard", "hooks")
    previous = os.path.join(base, "planguard", "claude-code")
    if not os.path.isdir(current) and os.path.isdir(previous):
        return previous
    return current


def daemon_enabled(environ: Any = None) -> bool:
    env = os.environ if environ is None else environ
    return env.get(ENV_DAEMON, "1").strip().lower() not in _OFF


def base_dir(environ: Any = None) -> str:
    """The directory a daemon runs in: Claude Code's project directory, else the working directory."""
    env = os.environ if environ is None else environ
    project = env.get("CLAUDE_PROJECT_DIR")
    if project and os.path.isabs(project) and os.path.isdir(project):
        return os.path.normpath(project)
    return os.getcwd()


def material(state_dir: str, environ: Any = None, executable: str | None = None) -> str:
    """Everything that makes one daemon answer differently from another; a daemon only answers hook
    processes whose material equals its own."""
    env = os.environ if environ is None else environ
    keyed = sorted(
        f"{k}={v}"
        for k, v in env.items()
        if (k.startswith(_KEYED) and not k.startswith(ENV_DAEMON)) or k.upper() in _KEYED_EXACT
    )
    # The interpreter's folder and version, not its name: ``python`` and ``python3`` of one virtualenv
    # (``planguard`` scripts use one, the installed hook command the other) share a daemon.
    python = f"{os.path.dirname(executable or sys.executable)}:{sys.hexversion:x}"
    parts = ["planguard-claude-code/1", python, state_dir, base_dir(env), *keyed]
    return "\0".join(parts)


def key_of(material_text: str) -> str:
    import zlib

    data = material_text.encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data[::-1]):08x}"


def _private_dir(path: str, create: bool) -> bool:
    """True when ``path`` is a real directory owned by this user that nobody else can enter."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not create:
            return False
        try:  # noqa: SIM105 - importing contextlib would cost this path milliseconds
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        st = os.lstat(path)
    is_dir = (st.st_mode & 0o170000) == 0o040000
    return is_dir and st.st_uid == os.getuid() and not st.st_mode & 0o077


class DaemonAddress:
    """The files of one daemon: ``<dir>/cc-<key>.sock`` (its socket), ``.lock`` (held while it lives, with
    its pid), ``.log`` (its standard error), ``.failed`` (when its last start failed)."""

    __slots__ = ("directory", "key", "material", "sock")

    def __init__(self, directory: str, key: str, material_text: str) -> None:
        self.directory = directory
        self.key = key
        self.material = material_text
        self.sock = os.path.join(directory, f"cc-{key}.sock")

    def path(self, ext: str) -> str:
        return os.path.join(self.directory, f"cc-{self.key}.{ext}")


def run_dirs(state_dir: str, environ: Any = None) -> list[str]:
    """Where a daemon's socket may go, in order: ``$XDG_RUNTIME_DIR/planguard``, ``<state dir>/run``, and
    ``/tmp/planguard-<uid>`` for when both make a socket path longer than the kernel takes (a deep state
    directory): the first private directory whose socket path fits is used."""
    env = os.environ if environ is None else environ
    out = []
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        out.append(os.path.join(runtime, "planguard"))
    out.append(os.path.join(state_dir, "run"))
    out.append(f"/tmp/planguard-{os.getuid()}")
    return out


def locate(state_dir: str, environ: Any = None, *, create: bool = True) -> DaemonAddress | None:
    """The daemon address for ``state_dir`` in this environment, or None when no private directory with a
    short enough socket path is available (then there is no daemon)."""
    env = os.environ if environ is None else environ
    text = material(state_dir, env)
    key = key_of(text)
    for directory in run_dirs(state_dir, env):
        if len(os.fsencode(os.path.join(directory, f"cc-{key}.sock"))) > MAX_SOCKET_PATH:
            continue
        parent = os.path.dirname(directory)
        try:
            if not os.path.isdir(parent):
                if not create or directory != os.path.join(state_dir, "run"):
                    continue
                os.makedirs(parent, 0o700, exist_ok=True)
            if _private_dir(directory, create):
                return DaemonAddress(directory, key, text)
        except OSError:
            continue
    return None


# --------------------------------------------------------------------------- talking to a daemon


class _Unanswered(Exception):
    """The daemon took the request but gave no answer in time."""


def _connect(path: str, timeout: float) -> Any:
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
    except OSError:
        s.close()
        return None
    return s


def _header(op: bytes, rid: str, config: str | None, state_dir: str, material_text: str) -> bytes:
    fields = [
        PROTOCOL,
        op,
        rid.encode(),
        os.fsencode(config) if config else b"",
        os.fsencode(state_dir),
        material_text.encode("utf-8", "surrogateescape"),  # last: it has NULs of its own
    ]
    body = b"\0".join(fields)
    return len(body).to_bytes(4, "big") + body


def _exchange(s: Any, request: bytes, payload: bytes, timeout: float) -> bytes | None:
    """Send, then read the reply to the end (``OK\\n`` and the answer, or ``ERR`` and why). None: the
    connection broke first (the daemon went away); raises :class:`_Unanswered` when the daemon is there
    but silent."""
    deadline = time.monotonic() + timeout
    chunks = []
    try:
        s.sendall(request)
        if payload:
            s.sendall(payload)
        s.shutdown(_socket.SHUT_WR)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Unanswered
            s.settimeout(remaining)
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    except TimeoutError:
        raise _Unanswered from None
    except OSError:
        return None
    finally:
        s.close()
    return b"".join(chunks) or None


def _lock_is_free(lock_path: str) -> bool:
    import fcntl

    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def _spawn(addr: DaemonAddress, state_dir: str, config: str | None) -> Popen[bytes] | bool:
    """Start the daemon unless one holds the lock (then False). The lock goes to the daemon with its file
    descriptor, so there is no moment in which a second hook could think nobody started one."""
    import fcntl

    fd = os.open(addr.path("lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        import subprocess

        log = os.open(addr.path("log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            cmd = [
                sys.executable,
                "-P",  # the project directory must not shadow modules the daemon imports
                "-m",
                "planguard_hooks.daemon",
                "--run-dir",
                addr.directory,
                "--key",
                addr.key,
                "--state-dir",
                state_dir,
                "--lock-fd",
                str(fd),
            ]
            if config:
                cmd += ["--warm-config", config]
            return subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,  # never Claude Code's pipes: it waits for them to close
                stderr=log,
                cwd=base_dir(),
                pass_fds=(fd,),
                start_new_session=True,  # not in the hook's process group, which a hook timeout kills
            )
        finally:
            os.close(log)
    finally:
        os.close(fd)  # the daemon has its own descriptor of the same lock


def _recently_failed(addr: DaemonAddress) -> bool:
    try:
        return time.time() - os.stat(addr.path("failed")).st_mtime < FAILED_BACKOFF_S
    except OSError:
        return False


def _mark_failed(addr: DaemonAddress, why: str) -> None:
    try:
        fd = os.open(addr.path("failed"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {why}\n".encode())
        finally:
            os.close(fd)
    except OSError:
        pass


def daemon_pid(addr: DaemonAddress) -> int | None:
    """The pid of the daemon holding ``addr``'s lock, or None when no daemon holds it."""
    if _lock_is_free(addr.path("lock")):
        return None
    try:
        with open(addr.path("lock"), "rb") as f:
            return int(f.read(32).split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _terminate(addr: DaemonAddress) -> None:
    import signal

    pid = daemon_pid(addr)
    if pid is not None and pid != os.getpid():
        try:  # noqa: SIM105 - see _private_dir
            os.kill(pid, signal.SIGTERM)
        except OSError:  # gone already
            pass


def timeout_s(environ: Any = None) -> float:
    env = os.environ if environ is None else environ
    try:
        value = float(env.get(ENV_TIMEOUT, "") or DEFAULT_TIMEOUT_S)
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if value > 0 else DEFAULT_TIMEOUT_S


class Unavailable(Exception):
    """No daemon answer for this call (the message says why): it is answered in-process."""

    def __init__(self, reason: str, *, quiet: bool = False) -> None:
        super().__init__(reason)
        self.quiet = quiet  # nothing the error log needs to hear again


def request(
    payload: bytes, config: str | None, state_dir: str, rid: str, dialect: str = "claude-code"
) -> bytes:
    """The daemon's answer to one hook payload of ``dialect``'s CLI (``b""``: no answer), starting the
    daemon if there is none. Raises :class:`Unavailable` when the call must be answered in-process."""
    addr = locate(state_dir)
    if addr is None:
        raise Unavailable("no private directory for the daemon's socket (see XDG_RUNTIME_DIR)")
    wait = timeout_s()
    head = _header(hook_op(dialect), rid, config, state_dir, addr.material)
    started: Popen[bytes] | None = None
    # Waiting for a starting daemon beats answering in-process on a busy machine: that would build
    # planguard a second time, competing with the daemon for the CPU.
    deadline = time.monotonic() + wait
    delay = 0.002
    broken = 0
    while True:
        s = _connect(addr.sock, wait)
        if s is not None:
            try:
                reply = _exchange(s, head, payload, wait)
            except _Unanswered:
                # Alive but silent past the timeout: wedged. Stop it so the next hook starts a fresh one;
                # this call is answered in-process (the request id keeps it from counting twice).
                _terminate(addr)
                raise Unavailable(
                    f"the daemon gave no answer within {wait:g}s; it was told to stop"
                ) from None
            if reply is not None and reply[:3] == b"OK\n":
                return reply[3:]
            if reply:
                raise Unavailable(f"the daemon refused the call ({reply[:200].decode(errors='replace')})")
            broken += 1  # it went away mid-call (idle exit, restart): the request id makes a retry safe
            if broken > 2:
                raise Unavailable("the daemon closed the connection without an answer, three times")
        elif started is None:
            if _recently_failed(addr):
                raise Unavailable("the daemon failed to start less than a minute ago", quiet=True)
            spawned = _spawn(addr, state_dir, config)
            if spawned is not False:
                started = spawned  # type: ignore[assignment]
        elif started.poll() is not None:
            _mark_failed(addr, f"daemon exited with status {started.returncode} before listening")
            raise Unavailable(f"the daemon exited with status {started.returncode} before listening")
        if time.monotonic() >= deadline:
            raise Unavailable(f"no daemon listening after {wait:g}s")
        time.sleep(delay)
        delay = min(delay * 2, 0.025)


def hook_op(dialect: str) -> bytes:
    """The request's operation: ``hook`` for Claude Code's payloads, ``hook:<dialect>`` for another CLI's
    (one daemon serves every dialect; see ``planguard_hooks.dialects``)."""
    return b"hook" if dialect == "claude-code" else b"hook:" + dialect.encode("ascii", "replace")


# --------------------------------------------------------------------------- the hook command


def _ensure_site() -> None:
    """Under ``python -S`` the site directories (where planguard is installed) are not on the path yet."""
    if sys.flags.no_site:
        import site

        site.main()


def _in_process(
    raw: bytes,
    config: str | None,
    state_dir: str,
    rid: str | None,
    stdout: IO[str] | None,
    why: str | None = None,
    dialect: str = "claude-code",
    fail_closed: bool = False,
) -> int:
    try:
        _ensure_site()
        from planguard_hooks import service
        from planguard_hooks.dialects import dialect as dialect_named

        speaks = dialect_named(dialect)
    except Exception as exc:  # planguard itself is broken or missing
        return unanswered(raw, f"cannot load planguard ({exc})", dialect, fail_closed, stdout)
    import io

    try:
        if why is not None:
            from planguard_hooks.state import SessionStore

            service._log_error(
                SessionStore(state_dir), f"hook daemon unavailable: {why}; answered in-process"
            )
        return service.main(
            config,
            state_dir,
            stdin=io.BytesIO(raw),  # decoded by the hook, which refuses bytes that are not UTF-8
            stdout=stdout,
            rid=rid,
            dialect=speaks,
        )
    except Exception as exc:  # past the service's own handling (it answers every call it can read)
        return unanswered(raw, f"{type(exc).__name__}: {exc}", dialect, fail_closed, stdout)


def unanswered(
    raw: bytes, problem: str, dialect: str, fail_closed: bool, stdout: IO[str] | None = None
) -> int:
    """The exit status for a call planguard could not answer at all. Fail-open: let through, with one line
    the CLI shows the user (``systemMessage``, which all four hook contracts display). Fail-closed: a call
    that is (or may be: the payload names no other event) about to run is blocked by the CLIs' blocking
    contract, exit status 2 with the reason on standard error."""
    line = problem.strip().splitlines()[-1][:300] if problem.strip() else "unknown error"
    if fail_closed and _may_start_a_tool(raw, dialect):
        print(
            f"PLANGUARD: this call is blocked: planguard could not evaluate it ({line}) and its gates are "
            "fail-closed. Fix planguard's installation, then try again.",
            file=sys.stderr,
        )
        return BLOCK_STATUS
    import json

    message = json.dumps({"systemMessage": f"planguard could not evaluate this call ({line}); let through"})
    out = sys.stdout if stdout is None else stdout
    try:
        out.write(message + "\n")
        out.flush()
    except (OSError, ValueError):
        pass
    return 0


def _may_start_a_tool(raw: bytes, dialect: str) -> bool:
    """Whether a payload planguard could not read may be the CLI's before-tool event: it names that event,
    or none of the other events planguard registers (a payload cut before its name may be one)."""
    start = TOOL_START_EVENT.get(dialect, DEFAULT_TOOL_START_EVENT)
    text = raw.decode("utf-8", "replace")
    if f'"{start}"' in text:
        return True
    others = OTHER_EVENTS.get(dialect, DEFAULT_OTHER_EVENTS)
    return not any(f'"{event}"' in text for event in others)


def fails_closed(environ: Any = None) -> bool:
    """``PLANGUARD_FAIL_CLOSED_GATES`` is on (the environment's word for every gate failing closed)."""
    env = os.environ if environ is None else environ
    return env.get("PLANGUARD_FAIL_CLOSED_GATES", "").strip().lower() in _ON


def main(
    config: str | None = None,
    state_dir: str | None = None,
    *,
    daemon: bool = True,
    stdin: IO[bytes] | None = None,
    stdout: IO[str] | None = None,
    dialect: str = "claude-code",
    fail_closed: bool = False,
) -> int:
    """Answer one hook call of ``dialect``'s CLI (``claude-code``, ``codex``, ``gemini``, ``opencode``):
    through the daemon when there is one (or can be started), else in-process. Returns 0, or
    :data:`BLOCK_STATUS` for a call planguard could not answer at all under ``fail_closed`` (or
    ``PLANGUARD_FAIL_CLOSED_GATES``; see :func:`unanswered`)."""
    try:
        raw = (sys.stdin.buffer if stdin is None else stdin).read()
    except (AttributeError, OSError, ValueError):  # no standard input at all
        raw = b""
    if not raw:
        return 0  # no payload, no answer (in-process it is the same: nothing to log)
    if not config:
        config = os.environ.get("PLANGUARD_CONFIG", "").strip() or None
    if config:
        config = os.path.abspath(os.path.expanduser(config))
    state = os.path.abspath(os.path.expanduser(state_dir) if state_dir else default_state_dir())
    rid: str | None = None
    why: str | None = None
    if daemon and daemon_enabled():
        rid = os.urandom(12).hex()
        try:
            answer = request(raw, config, state, rid, dialect)
        except Unavailable as exc:
            why = None if exc.quiet else str(exc)
        except Exception as exc:  # never let the fast path cost the call
            why = f"hook client failed ({type(exc).__name__}: {exc})"
        else:
            if stdout is None:
                out = sys.stdout.buffer
                if answer:
                    out.write(answer + b"\n")
                out.flush()
            else:
                if answer:
                    stdout.write(answer.decode("utf-8") + "\n")
                stdout.flush()
            return 0
    return _in_process(raw, config, state, rid, stdout, why, dialect, fail_closed or fails_closed())


def daemon_status(state_dir: str | None = None, environ: Any = None) -> list[dict[str, Any]]:
    """What the daemons found in the run directories of ``state_dir`` report about themselves (any
    environment or project directory)."""
    import json

    state = os.path.abspath(state_dir or default_state_dir(environ))
    out = []
    for directory in run_dirs(state, environ):
        if not _private_dir(directory, False):
            continue
        for name in sorted(os.listdir(directory)):
            if not (name.startswith("cc-") and name.endswith(".sock")):
                continue
            s = _connect(os.path.join(directory, name), 2.0)
            if s is None:
                continue
            try:
                reply = _exchange(s, _header(b"status", "status", None, state, ""), b"", 5.0)
            except _Unanswered:
                reply = None
            if reply and reply[:3] == b"OK\n":
                # Not through planguard.documents: the reply is the daemon's own status object, from a
                # socket in a private directory whose peer was checked to be this user.
                out.append(json.loads(reply[3:]))
    return out


def _gone(pid: int) -> bool:
    """True when process ``pid`` has exited (a zombie waiting for its parent counts as exited)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[:1] == [b"Z"]
    except FileNotFoundError:
        return True
    except OSError:  # no /proc
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
        return False


def stop_daemons(state_dir: str | None = None, environ: Any = None, *, wait_s: float = 10.0) -> int:
    """Stop every daemon serving ``state_dir`` (whatever its environment); returns how many were running.
    Waits (at most ``wait_s``) until each has exited, its sinks flushed."""
    import signal

    state = os.path.abspath(state_dir or default_state_dir(environ))
    locks = []
    for directory in run_dirs(state, environ):
        if not _private_dir(directory, False):
            continue
        for name in os.listdir(directory):
            if name.startswith("cc-") and name.endswith(".lock"):
                locks.append(os.path.join(directory, name))
    pids = []
    for lock in locks:
        if _lock_is_free(lock):
            continue
        try:
            with open(lock, "rb") as f:
                pid = int(f.read(32).split()[0])
            os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError, IndexError):
            continue
        pids.append(pid)
    deadline = time.monotonic() + wait_s
    pending = list(pids)
    while pending and time.monotonic() < deadline:
        pending = [pid for pid in pending if not _gone(pid)]
        if pending:
            time.sleep(0.02)
    return len(pids)


def cli(argv: list[str] | None = None) -> int:
    """``planguard-hook [--dialect CLI] [--config FILE] [--state-dir DIR] [--no-daemon] [--fail-closed]``
    (also what ``python -S .../client.py`` runs). Other options (``--show``, ``--stop-daemons``, ``--help``)
    go to the full command line of :func:`planguard_hooks.service.cli`."""
    args = sys.argv[1:] if argv is None else list(argv)
    config: str | None = None
    state_dir: str | None = None
    dialect = "claude-code"
    daemon = True
    fail_closed = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("--config", "--state-dir", "--dialect") and i + 1 < len(args):
            if arg == "--config":
                config = args[i + 1]
            elif arg == "--state-dir":
                state_dir = args[i + 1]
            else:
                dialect = args[i + 1]
            i += 2
            continue
        if arg.startswith("--config="):
            config = arg.split("=", 1)[1]
        elif arg.startswith("--state-dir="):
            state_dir = arg.split("=", 1)[1]
        elif arg.startswith("--dialect="):
            dialect = arg.split("=", 1)[1]
        elif arg == "--no-daemon":
            daemon = False
        elif arg == "--fail-closed":
            fail_closed = True
        else:
            _ensure_site()
            from planguard_hooks.service import cli as full_cli

            return full_cli(args)
        i += 1
    return main(config, state_dir, daemon=daemon, dialect=dialect, fail_closed=fail_closed)


if __name__ == "__main__":
    sys.exit(cli())
