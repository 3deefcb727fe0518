"""What people read: each event in words, notices for notification channels, how to decide, links."""
