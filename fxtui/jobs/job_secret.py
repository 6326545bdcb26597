"""The key that lets the collectors of one job across nodes speak to each other, and no one else.

Each user has one fxtui secret: 32 random bytes in ``$XDG_CONFIG_HOME/fxtui/secret`` (``~/.config/fxtui/secret``),
0600, made the first time a job leads (or at ``FXTUI_SECRET_FILE``). Clusters usually share the home directory
between nodes, and then every node has it; otherwise the user copies the file once. The secret never leaves the
file: no command line, no environment, no log, no store holds it. Each job's key is derived from it and a nonce
the lead draws for the job (HMAC-SHA256), so a key is good for one job only. The job's store — which anyone who
reaches it may read — holds the nonce and the key's fingerprint (a hash of the key: it tells a node whose secret
differs that it does, in one sentence, and gives nothing towards the key).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

from fxtui.core.errors import FxtuiError

#: Where the secret is, when not in the default place.
SECRET_FILE = "FXTUI_SECRET_FILE"


def secret_path() -> Path:
    """This user's fxtui secret file."""
    given = os.environ.get(SECRET_FILE)
    if given:
        return Path(given).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "fxtui" / "secret"


def read_secret(create: bool = False) -> bytes:
    """The secret (made, 0600, when ``create`` and there is none); FxtuiError, one sentence, when it cannot be had
    or others may read it."""
    path = secret_path()
    if create and not path.exists():
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
        except FileExistsError:
            pass  # another collector of this user made it meanwhile
        except OSError as e:
            raise FxtuiError(f"cannot make fxtui's secret {path}: {e.strerror or e}") from None
    try:
        info = path.stat()
        text = path.read_text().strip()
    except OSError:
        raise FxtuiError(
            f"no fxtui secret at {path}: copy node 0's (the nodes of a job share one; a shared home directory does it)"
        ) from None
    if info.st_mode & 0o077 or not stat.S_ISREG(info.st_mode):
        raise FxtuiError(f"{path} can be read by other users (mode {oct(info.st_mode & 0o777)}); chmod 600 it")
    try:
        secret = bytes.fromhex(text)
    except ValueError:
        secret = b""
    if len(secret) < 16:
        raise FxtuiError(f"{path} does not hold an fxtui secret (at least 32 hex digits)")
    return secret


def job_key(secret: bytes, nonce: str) -> bytes:
    """The key of the job whose lead drew ``nonce``."""
    return hmac.new(secret, b"fxtui job key " + nonce.encode(), hashlib.sha256).digest()


def fingerprint(key: bytes) -> str:
    """What the store may say of ``key``: enough to tell two keys apart, nothing towards either."""
    return hashlib.sha256(b"fxtui key fingerprint " + key).hexdigest()[:16]


def new_nonce() -> str:
    return secrets.token_hex(16)
