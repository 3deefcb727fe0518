"""Text from strangers made inert, strict JSON, the payloads' wire shape, a notification's signature."""
