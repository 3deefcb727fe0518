"""The signer's side: what a signer signs (derived from what it shows and what the server
says) and the keys it signs with. The CLI, the inbox and the library's `signed_decision` sign
here; the rules that check what they signed are `approval/`'s."""
