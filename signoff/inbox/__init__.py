"""The inbox: a web page where the people who decide see every waiting call and decide, live.

`signoff inbox` serves it (`cli/inbox.py`); `inbox_app` is the ASGI app. It is a Temporal
client like the CLI: it lists waiting runs from visibility, reads their queries and
decides through the validated update, each decision bound to the digest of what the
person was shown, and signed for them with the inbox's own key where a policy wants
verified approvers. Modules: `who` (who is asking), `calls` (what it reads), `decide`
(what it sends), `signer` (its key), `live` (server-sent events, capped per viewer), `guard`
(CSRF, origins, headers; the `Host` check is `signoff.runtime.hosts`, shared with the codec
server), `scope` (what each viewer sees), `seen` (what they opened: cut rows), `view` (inert
rendering), `slack` and `slack_users` (the Slack app: Slack-signed clicks, decided for the
mapped person through the same `Decisions` and signer), `app` (the routes).
"""

from signoff.inbox.app import inbox_app
from signoff.inbox.signer import InboxSigner
from signoff.inbox.who import Viewer, WhoIsAsking

__all__ = ["InboxSigner", "Viewer", "WhoIsAsking", "inbox_app"]
