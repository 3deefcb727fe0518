"""Text from strangers made inert, and what people read: events, how-to lines, notices, links."""
