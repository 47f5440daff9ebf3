"""A redis-server speaking only TLS, with a throw-away certificate authority: the CA signs a
server certificate for 127.0.0.1, and a second, unrelated CA exists so a test can point a
client at the wrong one. Nothing is written outside the server's own temporary directory."""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import redis
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support.servers import DIES_WITH_TESTS, PortTaken, free_port


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _certificate(subject, issuer, public_key, signing_key, *, ca: bool, ip: str | None = None) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    if ip:
        names = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))])
        builder = builder.add_extension(names, critical=False)
    return builder.sign(signing_key, hashes.SHA256())


def make_authority(directory: Path, stem: str) -> tuple[Path, ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A self-signed CA certificate written to ``<stem>.pem``; returns its path, key and cert."""
    key = _key()
    name = _name(f"Queuewatch test {stem}")
    cert = _certificate(name, name, key.public_key(), key, ca=True)
    path = directory / f"{stem}.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path, key, cert


class TlsRedisServer:
    """redis-server with ``--port 0`` (no plain-text listener) and a TLS port; clients need not
    present a certificate (``--tls-auth-clients no``), as with most hosted services."""

    HOST = "127.0.0.1"

    def __init__(self, *config: str):
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (Debian/Ubuntu: apt-get install redis-server)")
        self.dir = Path(tempfile.mkdtemp(prefix="qw-redis-tls-"))
        self.ca_path, ca_key, ca_cert = make_authority(self.dir, "ca")
        self.wrong_ca_path, _, _ = make_authority(self.dir, "other-ca")
        server_key = _key()
        server_cert = _certificate(
            _name(self.HOST), ca_cert.subject, server_key.public_key(), ca_key, ca=False, ip=self.HOST
        )
        self.cert_path = self.dir / "server.pem"
        self.key_path = self.dir / "server.key"
        self.cert_path.write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
        self.key_path.write_bytes(_pem_key(server_key))
        self.key_path.chmod(0o600)
        self.config = config
        for _ in range(5):
            self.port = free_port()
            try:
                self._start(binary)
                return
            except PortTaken:
                continue
        raise RuntimeError("redis-server found no free port in 5 tries")

    def _start(self, binary: str) -> None:
        log = self.dir / "redis.log"
        args = [
            binary,
            "--port", "0",
            "--tls-port", str(self.port),
            "--bind", self.HOST,
            "--tls-cert-file", str(self.cert_path),
            "--tls-key-file", str(self.key_path),
            "--tls-ca-cert-file", str(self.ca_path),
            "--tls-auth-clients", "no",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.dir),
            "--loglevel", "warning",
            "--logfile", str(log),
        ]  # fmt: skip
        for line in self.config:
            args += ["--" + line.split()[0], *line.split()[1:]]
        self.proc = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=DIES_WITH_TESTS
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                with self.client() as probe:
                    if probe.info("server")["process_id"] == self.proc.pid:
                        return
            except redis.RedisError:
                pass
            if self.proc.poll() is not None:
                said = self.proc.stderr.read().decode(errors="replace") + (log.read_text() if log.exists() else "")
                if "Address already in use" in said:
                    raise PortTaken(self.port)
                raise RuntimeError(f"redis-server (TLS) did not start: {said[-3000:]}")
            if time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait(10)
                raise RuntimeError("redis-server (TLS) did not start in 10 s")
            time.sleep(0.05)

    def url(self, db: int = 0, *, ca: Path | None = None) -> str:
        return f"rediss://{self.HOST}:{self.port}/{db}?ssl_ca_certs={ca or self.ca_path}"

    def client(self, db: int = 0) -> redis.Redis:
        return redis.Redis(
            host=self.HOST, port=self.port, db=db, ssl=True, ssl_ca_certs=str(self.ca_path), socket_timeout=2
        )

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.proc.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)
