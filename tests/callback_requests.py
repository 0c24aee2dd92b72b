"""Posting a Dash callback the way the browser does, without a browser."""

from __future__ import annotations


def post_callback(app, output: str, values: dict, changed: str) -> dict:
    """The JSON answer of the callback of ``output``, given ``values`` by (id, property) for
    its inputs and states (None for the rest) and ``changed`` as the property that fired."""
    spec = app.callback_map[output]
    body = {"output": output,
            "outputs": [{"id": o.component_id, "property": o.component_property}
                        for o in spec["output"]],
            "inputs": [{**i, "value": values.get((i["id"], i["property"]))}
                       for i in spec["inputs"]],
            "state": [{**s, "value": values.get((s["id"], s["property"]))}
                      for s in spec["state"]],
            "changedPropIds": [changed]}
    response = app.server.test_client().post("/_dash-update-component", json=body)
    assert response.status_code == 200, response.data
    return response.get_json()["response"]
