"""`mcp-runtime serve --listen` as an OAuth resource server, driven end to end.

    serve_oauth_client.py GATEWAY FIXTURE DIR

Runs an authorization server of its own (RFC 8414 metadata and a JWK Set, on
loopback, with an ES256 key drawn now), starts the gateway (GATEWAY, with the
fixture server FIXTURE as its one upstream, its config in DIR) trusting it, and
prints as JSON what the gateway answered: the Protected Resource Metadata, each
refused token's status and challenge, the calls of clients of both eras with a good
token, another principal's use of a session, how often the keys were fetched, and
whether any token appeared in the gateway's log.
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anyio
import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

AUDIENCE = "https://gateway.example/mcp"
METADATA_URL = "https://gateway.example/.well-known/oauth-protected-resource/mcp"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


class Issuer:
    """An authorization server's metadata and keys, on loopback."""

    def __init__(self):
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.jwks_fetches = 0
        jwk = json.loads(ECAlgorithm.to_jwk(self.key.public_key()))
        jwk.update(kid="k1", alg="ES256", use="sig")
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path == "/.well-known/oauth-authorization-server":
                    body = {"issuer": issuer.url, "jwks_uri": issuer.url + "/jwks"}
                elif self.path == "/jwks":
                    issuer.jwks_fetches += 1
                    body = {"keys": [jwk]}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def token(self, key=None, kid="k1", algorithm="ES256", **changes):
        now = int(time.time())
        claims = {
            "iss": self.url,
            "sub": "alice",
            "aud": AUDIENCE,
            "iat": now,
            "exp": now + 300,
            "scope": "mcp other",
        }
        claims.update(changes)
        claims = {name: value for name, value in claims.items() if value is not None}
        return jwt.encode(claims, key or self.key, algorithm=algorithm, headers={"kid": kid})


def post(url, body, token=None, session=None):
    """Status and `WWW-Authenticate` of a plain POST."""
    headers = dict(ACCEPT)
    if token:
        headers["authorization"] = f"Bearer {token}"
    if session:
        headers["mcp-session-id"] = session
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
            return response.status, response.headers.get("mcp-session-id")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("www-authenticate")


def get(url, token=None):
    headers = {"authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("www-authenticate")


async def session(url, token, mode):
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    async with Client(streamable_http_client(url, http_client=http), mode=mode) as c:
        with anyio.fail_after(20):
            while "mcp__up__echo" not in (names := [t.name for t in (await c.list_tools()).tools]):
                await anyio.sleep(0.05)
        echo = await c.call_tool("mcp__up__echo", {"text": "hi"})
        return {"tools": "mcp__up__echo" in names, "echo": echo.structured_content}


def main():
    gateway_bin, fixture, workdir = sys.argv[1:4]
    issuer = Issuer()
    config = os.path.join(workdir, "config.toml")
    with open(config, "w") as f:
        f.write(
            f'[serve.auth]\nissuer = "{issuer.url}"\naudience = "{AUDIENCE}"\nscopes = ["mcp"]\n\n'
            f'[mcp_servers.up]\ncommand = "{fixture}"\n'
        )
    log = open(os.path.join(workdir, "gateway.log"), "w+")
    gateway = subprocess.Popen(
        [gateway_bin, "serve", "--listen", "0", "--config", config],
        stdout=subprocess.PIPE,
        stderr=log,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "RUST_LOG": "debug"},
    )
    try:
        line = gateway.stdout.readline().decode().strip()
        url = line.removeprefix("listening on ")
        base = url.removesuffix("/mcp")
        other_key = ec.generate_private_key(ec.SECP256R1())
        good = issuer.token()
        tokens = {
            "none": None,
            "expired": issuer.token(exp=int(time.time()) - 600),
            "wrong_audience": issuer.token(aud="https://elsewhere.example/mcp"),
            "wrong_issuer": issuer.token(iss="https://impostor.example"),
            "no_subject": issuer.token(sub=None),
            "no_scope": issuer.token(scope="other"),
            "unknown_key": issuer.token(key=other_key, kid="k2"),
            "forged_with_known_kid": issuer.token(key=other_key),
            "shared_secret": issuer.token(key="a" * 32, algorithm="HS256"),
            "unsigned": jwt.encode(
                {"iss": issuer.url, "sub": "alice", "aud": AUDIENCE, "exp": int(time.time()) + 300},
                None,
                algorithm="none",
            ),
            "not_a_jwt": "opaque-token-value",
        }
        report = {"metadata": get(base + "/.well-known/oauth-protected-resource/mcp")}
        report["refused"] = {name: post(url, INITIALIZE, token) for name, token in tokens.items()}
        report["health"] = get(base + "/healthz", good)[0]
        report["clients"] = {
            mode: anyio.run(session, url, good, mode) for mode in ("legacy", "2026-07-28")
        }
        status, opened = post(url, INITIALIZE, good)
        bob = issuer.token(sub="bob")
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        report["session"] = {
            "opened": status,
            "other_principal": post(url, ping, bob, opened)[0],
            "owner": post(url, ping, good, opened)[0],
        }
        report["jwks_fetches"] = issuer.jwks_fetches
    finally:
        gateway.send_signal(signal.SIGTERM)
        report_status = gateway.wait(timeout=30)
    log.seek(0)
    text = log.read()
    every = [good, bob] + [token for token in tokens.values() if token]
    report["token_in_log"] = any(token in text for token in every)
    report["exit"] = report_status
    print(json.dumps(report))


main()
