"""The secret files: every file a setting names whose contents signoff keeps to itself.

One registry, read by the file tools' guard (`signoff.tools.files.guard`: file tools never
read, write or remove these files, whatever their names or links) and by whoever documents
or tests the secrets. Each is read without being stalled by what sits at its path
(`config/smallfile.py`). A new setting that names a secret file is added here, and so is
guarded at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from signoff.config.environment import (
    APPROVER_KEY_FILE_ENV,
    APPROVER_KEYS_ENV,
    AUTO_SIGNING_KEY_FILE_ENV,
    CODEC_KEYS_ENV,
    CODEC_SERVER_TOKEN_FILE_ENV,
    INBOX_SIGNING_KEY_FILE_ENV,
    LLM_API_KEY_FILE_ENV,
    LOCAL_STATE_KEY,
    MCP_CONFIG_ENV,
    NOTIFY_SECRET_FILE_ENV,
    S3_SECRET_ACCESS_KEY_FILE_ENV,
    SLACK_BOT_TOKEN_FILE_ENV,
    SLACK_SIGNING_SECRET_FILE_ENV,
    SLACK_USERS_ENV,
    STATE_KEY_FILE_ENV,
    TEMPORAL_CONFIG_FILE_ENV,
    TEMPORAL_TLS_CLIENT_KEY_PATH_ENV,
    Environment,
)


@dataclass(frozen=True)
class SecretFile:
    """A setting whose value is the path of a secret file.

    Attributes:
        variable: the environment variable that names the file.
        holds: what the file holds, in words.
    """

    variable: str
    holds: str


SECRET_FILES = (
    SecretFile(LLM_API_KEY_FILE_ENV, "the model provider's API key"),
    SecretFile(NOTIFY_SECRET_FILE_ENV, "the key that signs notifications"),
    SecretFile(APPROVER_KEYS_ENV, "the keys that verify approvers' tokens (an HS256 secret signs them too)"),
    SecretFile(APPROVER_KEY_FILE_ENV, "the private key a person or service signs decisions with"),
    SecretFile(STATE_KEY_FILE_ENV, "the key that seals the state runs carry across continue-as-new"),
    SecretFile(S3_SECRET_ACCESS_KEY_FILE_ENV, "the S3 secret access key of the payload store"),
    SecretFile(CODEC_KEYS_ENV, "the keys that encrypt payloads"),
    SecretFile(TEMPORAL_TLS_CLIENT_KEY_PATH_ENV, "the private key of the Temporal client certificate"),
    SecretFile(TEMPORAL_CONFIG_FILE_ENV, "Temporal's client configuration (API keys, TLS keys)"),
    SecretFile(MCP_CONFIG_ENV, "MCP servers, whose headers and env may hold tokens"),
    SecretFile(INBOX_SIGNING_KEY_FILE_ENV, "the key the inbox signs its users' decisions with"),
    SecretFile(AUTO_SIGNING_KEY_FILE_ENV, "the key the worker signs auto mode's decisions with"),
    SecretFile(CODEC_SERVER_TOKEN_FILE_ENV, "the bearer token of `signoff codec-server`"),
    SecretFile(SLACK_BOT_TOKEN_FILE_ENV, "the Slack app's bot token"),
    SecretFile(SLACK_SIGNING_SECRET_FILE_ENV, "the Slack app's signing secret, which vouches for who clicked"),
    SecretFile(SLACK_USERS_ENV, "who each Slack user is to signoff (written, it names approvers)"),
)
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
