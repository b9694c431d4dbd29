"""An HTTPS server on a free loopback port that serves what a test tells it: client ID metadata
documents, redirects, a slow drip, a huge body. Its certificate is issued by a throwaway CA made
here with ``cryptography`` (the CA file is what the server under test trusts)."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

Route = Callable[[BaseHTTPRequestHandler], None]


def make_ca(folder: Path) -> tuple[Path, Path, Path]:
    """``(ca.pem, server cert, server key)`` for 127.0.0.1 and localhost."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mcpcore test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])).issuer_name(ca_name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


@dataclass
class DocServer:
    """The running server: ``base`` (``https://127.0.0.1:port``), its CA file, and its routes."""

    base: str
    ca: Path
    routes: dict[str, Route] = field(default_factory=dict)
    hits: dict[str, int] = field(default_factory=dict)

    def json(self, path: str, doc: object, cache: str | None = "max-age=300") -> str:
        """Serve ``doc`` at ``path``; returns its URL."""
        body = orjson.dumps(doc)

        def answer(h: BaseHTTPRequestHandler) -> None:
            h.send_response(200)
            h.send_header("content-type", "application/json")
            h.send_header("content-length", str(len(body)))
            if cache:
                h.send_header("cache-control", cache)
            h.end_headers()
            h.wfile.write(body)

        self.routes[path] = answer
        return self.base + path

    def redirect(self, path: str, location: str) -> str:
        def answer(h: BaseHTTPRequestHandler) -> None:
            h.send_response(302)
            h.send_header("location", location)
            h.send_header("content-length", "0")
            h.end_headers()

        self.routes[path] = answer
        return self.base + path

    def huge(self, path: str, size: int, declare: bool) -> str:
        """A body of ``size`` bytes, with or without its Content-Length."""
        def answer(h: BaseHTTPRequestHandler) -> None:
            h.send_response(200)
            h.send_header("content-type", "application/json")
            if declare:
                h.send_header("content-length", str(size))
            h.end_headers()
            chunk = b" " * 65536
            with contextlib.suppress(OSError):
                for _ in range(size // len(chunk)):
                    h.wfile.write(chunk)

        self.routes[path] = answer
        return self.base + path

    def slow(self, path: str, seconds: float) -> str:
        """A valid-looking body that trickles out one byte a second for ``seconds``."""
        def answer(h: BaseHTTPRequestHandler) -> None:
            h.send_response(200)
            h.send_header("content-type", "application/json")
            h.end_headers()
            with contextlib.suppress(OSError):
                for _ in range(int(seconds)):
                    h.wfile.write(b" ")
                    h.wfile.flush()
                    time.sleep(1)

        self.routes[path] = answer
        return self.base + path


@contextlib.contextmanager
def run_docserver(folder: Path) -> Iterator[DocServer]:
    ca, cert, key = make_ca(folder)
    state = DocServer("", ca)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            state.hits[path] = state.hits.get(path, 0) + 1
            route = state.routes.get(path)
            if route is None:
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            route(self)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    state.base = f"https://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
