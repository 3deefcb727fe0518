"""Approvals: requests and decisions, policy, people, tokens and keys, the audit trail."""
