"""What people read: each event in words, notices for notification channels, how to decide, links,
and what Slack shows of a waiting call (`slack.py`: the channel's message, the reviewer's modal)."""
