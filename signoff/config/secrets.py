"""The secret files: every file a setting names whose contents signoff keeps to itself.

One registry, read by the file tools' guard (`signoff.tools.files.guard`: file tools never
read, write or remove these files, whatever their names or links) and by whoever documents
or tests the secrets. Each is read without being stalled by what sits at its path
(`config/smallfile.py`). They are the variables `config/environment.py` declares with
`secret=` (what the file holds): a new setting that names a secret file says so where it is
declared, and so is guarded at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from signoff.config.environment import LOCAL_STATE_KEY, STATE_KEY_FILE_ENV, VARIABLES, Environment


@dataclass(frozen=True)
class SecretFile:
    """A setting whose value is the path of a secret file.

    Attributes:
        variable: the environment variable that names the file.
        holds: what the file holds, in words.
    """

    variable: str
    holds: str


SECRET_FILES = tuple(SecretFile(str(v), v.secret) for v in VARIABLES if v.secret is not None)
"""Every setting that names a secret file."""
SECRET_FILE_VARIABLES = tuple(secret.variable for secret in SECRET_FILES)


def secret_paths(env: Environment) -> dict[str, str]:
    """The secret files `env` names, by the setting that names each, and the embedded server's
    state key when the worker made one in its directory."""
    paths = {secret.variable: path for secret in SECRET_FILES if (path := env.get(secret.variable))}
    if LOCAL_STATE_KEY.is_file():
        paths.setdefault(STATE_KEY_FILE_ENV, str(LOCAL_STATE_KEY.absolute()))
    return paths


__all__ = ["SECRET_FILES", "SECRET_FILE_VARIABLES", "SecretFile", "secret_paths"]
