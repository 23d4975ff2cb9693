"""Calling a Dash app's callbacks over HTTP as the browser does (`_dash-dependencies`, then
`_dash-update-component`), for tests and the dashboard benchmark.

    callbacks = DashCallbacks(get_json, post_json, "/dashboard/")
    body = callbacks.call("overview-throughput.figure", {"shell-interval.n_intervals": 1})
"""

from collections.abc import Callable


class DashCallbacks:
    def __init__(self, get_json: Callable[[str], object], post_json: Callable[[str, dict], tuple[int, bytes]],
                 prefix: str = "/dashboard/") -> None:
        self._post = post_json
        self._prefix = prefix
        self.dependencies = get_json(prefix + "_dash-dependencies")

    def find(self, output_part: str) -> dict:
        """The callback whose output string contains `output_part` (e.g. "throughput-brokers.figure")."""
        found = [d for d in self.dependencies if output_part in d["output"]]
        assert len(found) == 1, f"{len(found)} callbacks output {output_part}"
        return found[0]

    def request(self, output_part: str, values: dict[str, object]) -> dict:
        """The request body: every input/state gets `values["id.prop"]` (None if not given)."""
        dependency = self.find(output_part)
        outputs = dependency["output"].strip(".").split("...")

        def spec(item: dict) -> dict:
            key = f"{item['id']}.{item['property']}"
            return {"id": item["id"], "property": item["property"], "value": values.get(key)}

        return {
            "output": dependency["output"],
            "outputs": [{"id": o.rsplit(".", 1)[0], "property": o.rsplit(".", 1)[1]} for o in outputs]
            if len(outputs) > 1 else {"id": outputs[0].rsplit(".", 1)[0], "property": outputs[0].rsplit(".", 1)[1]},
            "inputs": [spec(i) for i in dependency["inputs"]],
            "state": [spec(s) for s in dependency["state"]],
            "changedPropIds": [f"{i['id']}.{i['property']}" for i in dependency["inputs"]][:1],
        }

    def call(self, output_part: str, values: dict[str, object]) -> tuple[int, bytes]:
        """(HTTP status, raw body) of one callback."""
        return self._post(self._prefix + "_dash-update-component", self.request(output_part, values))
