"""Who may do what (roles, actions, the one permission check per action), API tokens and login hardening.

`actions` declares roles and actions; `checks` is the check and its pairing with the audit log; `rest`,
`console`, `commands` and `controlplane.dashboard.actions` adapt them to each front end (ARCHITECTURE.md,
"Permissions and auditing").
"""
