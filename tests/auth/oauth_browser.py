"""A person's browser for ``MCPCORE_OAUTH_BROWSER`` in the CLI's OAuth tests: given the
authorization URL, it signs in at the provider, allows on mcpcore's consent page and goes back to
the CLI's loopback redirect, as a browser would. ``--wrong-state`` changes the state on the way
back. Each URL it is given is appended to ``$TEST_BROWSER_LOG``; the loopback page's status and
title too."""

from __future__ import annotations

import os
import re
import sys
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from tests.auth.upstream import Browser


def main() -> None:
    url = sys.argv[-1]
    log = os.environ.get("TEST_BROWSER_LOG")
    redirect = parse_qs(urlsplit(url).query)["redirect_uri"][0]
    browser = Browser(redirect)
    try:
        landing = browser.walk(url)
        if not landing.query:
            landing = browser.decide(landing.page)
    finally:
        browser.close()
    query = dict(landing.query)
    if "--wrong-state" in sys.argv:
        query["state"] = "not-the-state-the-cli-sent"
    page = httpx.get(f"{redirect}?{urlencode(query)}", timeout=20)
    title = re.search(r"<title>([^<]*)</title>", page.text)
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{url}\n{page.status_code} {title.group(1) if title else ''}\n")


if __name__ == "__main__":
    main()
