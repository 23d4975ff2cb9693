"""Who may do what: the three roles and the registry of actions, each needing one role at least.

An `Action` is one kind of change (or, for `VIEW_CLUSTER`, of reading) a person can make to the cluster. Its
`name` is the audit log's `action` and, unless `permission` says otherwise, the codename of the Django
permission `access.<codename>` that grants it. A role is a Django group holding the permissions of every
action at or below its level (`roles.sync_roles` keeps the groups equal to this table); superusers may do
everything. Actions declared here before their feature exists (reading messages, reassignments, alerts,
topics, configs) are used unchanged by the issues that add them.
"""

import enum
from dataclasses import dataclass

__all__ = ("ACTIONS", "Action", "Role", "action", "permissions")


class Role(enum.IntEnum):
    """Roles in increasing power; each holds every permission of the roles below it."""

    VIEWER = 1
    OPERATOR = 2
    ADMIN = 3

    @property
    def group_name(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class Action:
    name: str
    label: str
    """What it is, as the subject of a sentence: "Resetting consumer-group offsets" (refusals start with it)."""
    role: Role
    """The lowest role allowed to do it."""
    permission: str = ""
    """Codename of the permission it needs (`access.<codename>`); the action's name unless shared."""

    def __post_init__(self):
        if not self.permission:
            object.__setattr__(self, "permission", self.name)

    @property
    def permission_name(self) -> str:
        """As `user.has_perm` wants it."""
        return f"access.{self.permission}"


ACTIONS: dict[str, Action] = {}


def action(name: str, label: str, role: Role, permission: str = "") -> Action:
    """Declare an action (module level only; names are unique)."""
    assert name not in ACTIONS, f"action {name!r} declared twice"
    ACTIONS[name] = declared = Action(name, label, role, permission)
    same_permission = {a.role for a in ACTIONS.values() if a.permission == declared.permission}
    assert len(same_permission) == 1, f"actions sharing permission {declared.permission!r} need the same role"
    return declared


def permissions() -> dict[str, tuple[str, Role]]:
    """Every declared permission: codename → (name shown in the Django admin, lowest role holding it)."""
    found: dict[str, tuple[str, Role]] = {}
    for declared in ACTIONS.values():
        name = _SHARED_PERMISSION_NAMES.get(declared.permission, declared.label)
        found.setdefault(declared.permission, (name, declared.role))
    return found


_SHARED_PERMISSION_NAMES = {
    "use_api_tokens": "Creating and revoking your own API tokens",
    "manage_reassignments": "Starting and cancelling partition reassignments",
    "manage_users": "Managing users, their roles and anyone's API tokens",
    "run_reports": "Running and cancelling reports",
}
VIEWER, OPERATOR, ADMIN = Role.VIEWER, Role.OPERATOR, Role.ADMIN

# Viewer: reading (every console page, REST read and the dashboard; not audited) and their own API tokens.
VIEW_CLUSTER = action("view_cluster", "Reading the cluster's metadata, groups, lag and audit log", VIEWER)
CREATE_TOKEN = action("create_token", "Creating API tokens for yourself", VIEWER, permission="use_api_tokens")
REVOKE_TOKEN = action("revoke_token", "Revoking your own API tokens", VIEWER, permission="use_api_tokens")

# Operator: run the cluster day to day.
READ_MESSAGES = action("read_messages", "Reading message contents", OPERATOR)
PRODUCE_TEST_MESSAGES = action("produce_test_messages", "Producing test messages", OPERATOR)
RESET_OFFSETS = action("reset_offsets", "Resetting consumer-group offsets", OPERATOR)
DELETE_CONSUMER_GROUP = action("delete_consumer_group", "Deleting consumer groups", OPERATOR)
ELECT_PREFERRED_LEADERS = action("elect_preferred_leaders", "Preferred leader election", OPERATOR)
START_REASSIGNMENT = action("start_reassignment", "Starting partition reassignments", OPERATOR,
                            permission="manage_reassignments")
CANCEL_REASSIGNMENT = action("cancel_reassignment", "Cancelling partition reassignments", OPERATOR,
                             permission="manage_reassignments")
MANAGE_ALERTS = action("manage_alerts", "Managing alerts", OPERATOR)
RUN_REPORTS = action("run_reports", "Running reports", OPERATOR)
CANCEL_REPORT_RUN = action("cancel_report_run", "Cancelling report runs", OPERATOR, permission="run_reports")
SCHEDULE_REPORTS = action("schedule_reports", "Changing report schedules", OPERATOR)

# Admin: change the shape of the cluster and who may use it.
CREATE_TOPICS = action("create_topics", "Creating topics", ADMIN)
DELETE_TOPICS = action("delete_topics", "Deleting topics", ADMIN)
CREATE_PARTITIONS = action("create_partitions", "Adding partitions to topics", ADMIN)
ALTER_CONFIGS = action("alter_configs", "Editing topic configs", ADMIN)
ELECT_UNCLEAN_LEADERS = action("elect_unclean_leaders", "Unclean leader election", ADMIN)
SET_ROLE = action("set_role", "Changing users' roles", ADMIN, permission="manage_users")
CHANGE_USER = action("change_user", "Adding, changing and deleting users", ADMIN, permission="manage_users")
REVOKE_USER_TOKEN = action("revoke_user_token", "Revoking other users' API tokens", ADMIN, permission="manage_users")

# Issue 13: `--verify` removing the throttles of finished reassignments (shares manage_reassignments).
CLEAR_REASSIGNMENT_THROTTLES = action("clear_reassignment_throttles", "Removing reassignment throttles", OPERATOR,
                                      permission="manage_reassignments")
# Issue 13: pausing and resuming a reassignment execution (controller.executor; shares manage_reassignments).
PAUSE_REASSIGNMENT = action("pause_reassignment", "Pausing partition reassignments", OPERATOR,
                            permission="manage_reassignments")
RESUME_REASSIGNMENT = action("resume_reassignment", "Resuming partition reassignments", OPERATOR,
                             permission="manage_reassignments")
# Issue 13: the Brokers page's Decommission button, which leads to the preview of moving everything off a broker
# (executing it is start_reassignment; shares manage_reassignments).
DECOMMISSION_BROKER = action("decommission_broker", "Decommissioning brokers", OPERATOR,
                             permission="manage_reassignments")
