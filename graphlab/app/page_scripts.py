"""The scripts the page loads: Dash's, with its legacy-browser polyfill swapped for the one
part of it the page's libraries use.

Dash loads Babel's polyfill (core-js 2 and regenerator-runtime, 100 kB) before React on every
page.  Evaluating it took 150 ms of a first render's main thread (one browser, two cores),
and every browser the app supports has what core-js adds.  Only the regenerator runtime is
needed: Dash's renderer and its core components call the global `regeneratorRuntime` their
async code was compiled against.  The
page loads that runtime (MIT, `assets/vendor`) in the polyfill's place; where a Dash release
no longer names the polyfill, its scripts are left as they are.
"""

from __future__ import annotations

import re

import dash

REGENERATOR_RUNTIME = "vendor/regenerator-runtime-0.13.11.js"
_POLYFILL_TAG = re.compile(r'<script src="[^"]*/deps/polyfill@[^"]*"></script>')


class GraphLabDash(dash.Dash):
    """A Dash app whose index page loads the regenerator runtime instead of the polyfill."""

    def interpolate_index(self, **kwargs) -> str:
        runtime = f'<script src="{self.get_asset_url(REGENERATOR_RUNTIME)}"></script>'
        kwargs["scripts"] = _POLYFILL_TAG.sub(lambda _match: runtime, kwargs["scripts"], count=1)
        return super().interpolate_index(**kwargs)
