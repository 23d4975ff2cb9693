"""`manage.py broker_skew [--json]`: each broker's replicas, leaders and bytes on disk with its share of the
cluster's and its skew from an even share, in percentage points (`controller.skew.report`, as `GET /api/skew/`
returns it; `--json` prints that body). A skew of `skew.SKEWED_PP` or more is marked `*`. Changes nothing."""

import json

from django.core.management.base import BaseCommand

from controlplane.controller import skew


def _cell(share: dict) -> str:
    if share["pct"] is None:
        return f"{share['value']:>12}       -       -  "
    mark = "*" if share["skewed"] else " "
    return f"{share['value']:>12} {share['pct']:5.1f} % {share['skew_pp']:+6.1f}{mark} "


class Command(BaseCommand):
    help = "Each broker's share of replicas, leaders and bytes on disk, and its skew from an even share."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", dest="as_json", help="print GET /api/skew/'s JSON body")

    def handle(self, *args, as_json: bool = False, **options):
        report = skew.report()
        if as_json:
            self.stdout.write(json.dumps(report, indent=2))
            return
        if not report["brokers"]:
            self.stdout.write("No brokers registered")
            return
        self.stdout.write(f"{'broker':>6}  {'state':<9}" + "".join(f"{m + ' (share, skew)':>29}"
                                                                  for m in skew.MEASURES))
        for row in report["brokers"]:
            cells = "".join(_cell(row[m]) for m in skew.MEASURES)
            self.stdout.write(f"{row['broker']:>6}  {row['state']:<9}{cells}".rstrip())
        largest = ", ".join(f"{m} {'-' if v is None else f'{v:.1f}'}" for m, v in report["max_skew_pp"].items())
        self.stdout.write(f"even share {report['even_share_pct']:.1f} % for {len(report['brokers'])} brokers; "
                          f"largest skew (points): {largest}; * marks {report['skewed_pp']:.0f} points or more")
