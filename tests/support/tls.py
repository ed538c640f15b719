"""A throwaway certificate authority for TLS tests, made with the tools operators use (openssl,
and the JDK's keytool for the broker's Java truststore): a CA, a server certificate for
127.0.0.1/localhost in a PKCS12 keystore, a truststore holding the CA, and a client certificate
and key for mutual TLS. `make_serving_certificate` makes the CA and the server certificate
alone, for servers that read PEM files (kube-apiserver).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

_DAYS = "2"


@dataclass(frozen=True)
class Certificates:
    ca: Path  # PEM: what clients check the server against
    server_cert: Path  # PEM, signed by the CA, for IP 127.0.0.1 and DNS localhost
    server_key: Path  # PEM, unencrypted
    keystore: Path  # PKCS12: the server's key and certificate chain
    truststore: Path  # PKCS12: the CA, for servers that check client certificates
    store_password: str
    client_cert: Path  # PEM, signed by the CA, for client authentication
    client_key: Path  # PEM, unencrypted


@dataclass(frozen=True)
class ServingCertificate:
    ca: Path  # PEM: what clients check the server against
    cert: Path  # PEM, signed by the CA, for IP 127.0.0.1 and DNS localhost
    key: Path  # PEM, unencrypted


def make_serving_certificate(directory: Path) -> ServingCertificate:
    directory.mkdir(parents=True, exist_ok=True)
    d = directory
    _run(
        "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", _DAYS,
        "-subj", "/CN=centrality test CA", "-keyout", d / "ca.key", "-out", d / "ca.pem",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    _signed(d, "server", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth")
    return ServingCertificate(ca=d / "ca.pem", cert=d / "server.pem", key=d / "server.key")


def make_certificates(directory: Path, store_password: str = "store-secret") -> Certificates:
    make_serving_certificate(directory)
    d = directory
    _signed(d, "client", "extendedKeyUsage=clientAuth")
    _run(
        "openssl", "pkcs12", "-export", "-name", "server", "-in", d / "server.pem",
        "-inkey", d / "server.key", "-certfile", d / "ca.pem", "-out", d / "server.p12",
        "-passout", f"pass:{store_password}",
    )  # fmt: skip
    _run(
        "keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", d / "ca.pem",
        "-storetype", "PKCS12", "-keystore", d / "truststore.p12", "-storepass", store_password,
    )  # fmt: skip
    return Certificates(
        ca=d / "ca.pem",
        server_cert=d / "server.pem",
        server_key=d / "server.key",
        keystore=d / "server.p12",
        truststore=d / "truststore.p12",
        store_password=store_password,
        client_cert=d / "client.pem",
        client_key=d / "client.key",
    )


def _signed(d: Path, name: str, extensions: str) -> None:
    (d / f"{name}.ext").write_text(extensions + "\n")
    _run(
        "openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN=centrality {name}",
        "-keyout", d / f"{name}.key", "-out", d / f"{name}.csr",
    )  # fmt: skip
    _run(
        "openssl", "x509", "-req", "-in", d / f"{name}.csr", "-days", _DAYS,
        "-CA", d / "ca.pem", "-CAkey", d / "ca.key", "-CAcreateserial",
        "-extfile", d / f"{name}.ext", "-out", d / f"{name}.pem",
    )  # fmt: skip


def _run(*argv: str | Path) -> None:
    result = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=60, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"{argv[0]} {argv[1]} failed: {result.stderr.strip()}")
