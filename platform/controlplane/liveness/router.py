"""The database router that keeps broker liveness in its own database (`settings.STROM_LIVENESS_DATABASE`).

On SQLite that is a second file: SQLite has one write lock per database file, which a metadata change holds
for its whole transaction (seconds at 100,000 partitions), so heartbeats written into the metadata file
waited for it and live brokers missed their session. On PostgreSQL it is the metadata store's database
(row locks: no metadata change locks a liveness row). Nothing else goes there.
"""

from django.conf import settings

LABEL = "liveness"


class LivenessRouter:
    @staticmethod
    def _alias() -> str:
        return settings.STROM_LIVENESS_DATABASE

    def db_for_read(self, model, **hints):
        return self._alias() if model._meta.app_label == LABEL else None

    db_for_write = db_for_read

    def allow_relation(self, obj1, obj2, **hints):
        return None

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        """The liveness app's tables only in the liveness database, and nothing else there (when separate)."""
        alias = self._alias()
        if alias == "default":
            return None
        return (app_label == LABEL) == (db == alias)
