"""The pages a person sees: the consent form and the error page. Server-rendered HTML, no
JavaScript, one inline stylesheet, readable on a phone (viewport meta, a single column); every
value shown is escaped. Served with a CSP that allows nothing but that stylesheet, and never in a
frame (``frame-ancestors 'none'``, ``X-Frame-Options: DENY``): a framed consent page could be
clicked through by a page the user cannot see."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

__all__ = ["ERRORS", "PAGE_HEADERS", "consent_page", "error_page"]

PAGE_HEADERS = [
    (b"content-type", b"text/html; charset=utf-8"),
    (b"content-security-policy", b"default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]

_STYLE = """
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1d2330}
main{max-width:28rem;margin:2rem auto;padding:1.5rem;background:#fff;border-radius:12px;
box-shadow:0 1px 3px rgba(0,0,0,.12)}
h1{font-size:1.3rem;margin:0 0 1rem}
p{margin:.5rem 0}
code,.id{font:0.85rem ui-monospace,Menlo,Consolas,monospace;word-break:break-all;background:#f0f1f4;
padding:.1rem .3rem;border-radius:4px}
ul{padding-left:1.2rem}
li{margin:.2rem 0}
.who{color:#4a5160;font-size:.9rem}
.actions{display:flex;gap:.75rem;margin-top:1.5rem}
button{flex:1;font:inherit;padding:.75rem;border-radius:8px;border:1px solid #c6cad3;background:#fff;cursor:pointer}
button.allow{background:#1f5fd1;border-color:#1f5fd1;color:#fff;font-weight:600}
.error h1{color:#a11b1b}
@media (max-width:32rem){main{margin:0;border-radius:0;min-height:100vh;box-sizing:border-box}}
"""

ERRORS = {
    "unknown_client": ("This application is not known",
                       "The application that sent you here is not registered with this server, or its "
                       "registration could not be read."),
    "bad_redirect": ("This sign-in link is not valid",
                     "The address the application asked to return to is not one it registered. You were not "
                     "sent there, to keep your account safe."),
    "bad_request": ("This sign-in link is not valid", "The request was malformed."),
    "expired": ("This sign-in has expired",
                "It took too long, or the page was opened twice. Go back to the application and start again."),
    "state_mismatch": ("This sign-in does not belong to this browser",
                       "The sign-in was started somewhere else, or its link was altered. Go back to the "
                       "application and start again."),
    "csrf": ("This form could not be accepted",
             "The form was not the one this server showed you, or it was sent from another site. Go back to "
             "the application and start again."),
    "upstream_refused": ("The sign-in was refused",
                         "Your identity provider did not let you sign in. Go back to the application to try again."),
    "upstream_failed": ("The identity provider could not be reached",
                        "Try again in a moment."),
    "busy": ("This server is busy", "Too many sign-ins are in progress. Try again in a moment."),
}


def _page(title: str, body: str, css_class: str = "") -> bytes:
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
            f'<body><main class="{css_class}">{body}</main></body></html>').encode()


def consent_page(*, client_name: str, client_id: str, redirect_host: str, scopes: Sequence[str], user: str,
                 server_name: str, action: str, pending: str, csrf: str, vouched: bool = False) -> bytes:
    """The consent form: who asks, where it will send you back, what it may do; Allow or Deny
    POSTs ``pending``, ``csrf`` and ``decision`` to ``action``. ``vouched``: the client was
    configured by the operator (else its name is only what it says of itself)."""
    items = "".join(f"<li><code>{escape(s)}</code></li>" for s in scopes) or "<li>no particular permission</li>"
    same = client_name == client_id
    ident = "" if same else f'<p>Client ID: <span class="id">{escape(client_id)}</span></p>'
    body = (f"<h1>Allow {escape(client_name)} to use {escape(server_name)}?</h1>"
            f'<p class="who">Signed in as <strong>{escape(user)}</strong></p>'
            f"{ident}"
            f"<p>It will send you back to <strong>{escape(redirect_host)}</strong>.</p>"
            + ("" if vouched else '<p class="who">The name is the application\'s own; trust it only if you '
               "started this sign-in and know that address.</p>") +
            f"<p>It asks for:</p><ul>{items}</ul>"
            f'<form method="post" action="{escape(action)}">'
            f'<input type="hidden" name="pending" value="{escape(pending)}">'
            f'<input type="hidden" name="csrf" value="{escape(csrf)}">'
            f'<div class="actions"><button type="submit" name="decision" value="deny">Deny</button>'
            f'<button class="allow" type="submit" name="decision" value="allow">Allow</button></div>'
            f"</form>")
    return _page(f"Allow {client_name}?", body)


def error_page(kind: str, detail: str | None = None, back: str | None = None) -> bytes:
    """The page for ``kind`` (a key of :data:`ERRORS`), with an optional detail line and a link
    ``back`` to the application."""
    title, text = ERRORS.get(kind, ERRORS["bad_request"])
    extra = f'<p class="who">{escape(detail)}</p>' if detail else ""
    if back:
        extra += f'<p><a href="{escape(back)}">Return to the application</a></p>'
    return _page(title, f"<h1>{escape(title)}</h1><p>{escape(text)}</p>{extra}", "error")
