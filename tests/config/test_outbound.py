"""The outbound policy (config/outbound.py) against real servers on 127.0.0.1: what it
refuses, after DNS and on every redirect, what it lets through when the operator
allows it, the cap on a reply's size, and what users are told."""

import datetime as dt
import ipaddress
import ssl
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from config import outbound
from config.outbound import HostNotFound, OutboundRefused, ResponseTooLarge
from tests.config.test_production import production_environment, settings_import
from tests.web_server import answer, serving


def ok(handler):
    answer(handler, 200, b'{"ok": true}')


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1/", "loopback"),
        ("http://localhost:8000/", "loopback"),
        ("http://2130706433/", "loopback"),  # 127.0.0.1 written as one number
        ("http://[::1]:8080/", "loopback"),
        ("http://[::ffff:127.0.0.1]/", "loopback"),
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
        ("http://[fd00:ec2::254]/", "cloud metadata"),
        ("http://[64:ff9b::a9fe:a9fe]/", "cloud metadata"),  # NAT64 of 169.254.169.254
        ("http://169.254.1.1/", "link-local"),
        ("http://10.0.0.7/", "private"),
        ("http://192.168.1.1/", "private"),
        ("http://172.16.0.1/", "private"),
        ("http://100.64.0.1/", "not a public"),
        ("http://0.0.0.0:8000/", "unspecified"),
        ("http://224.0.0.1/", "multicast"),
        ("http://240.0.0.1/", "reserved"),
    ],
)
def test_it_refuses_addresses_near_the_server(url, reason):
    with pytest.raises(OutboundRefused, match=reason) as refused:
        outbound.check_url(url)
    assert "OUTBOUND_ALLOW" in str(refused.value)


def test_it_refuses_other_schemes_and_lets_public_addresses_through():
    with pytest.raises(OutboundRefused, match="not an http"):
        outbound.check_url("file:///etc/passwd")
    assert outbound.check_url("https://8.8.8.8/") == [ipaddress.ip_address("8.8.8.8")]


def test_a_name_that_resolves_to_a_private_address_is_refused_by_name_and_address():
    def resolver(host, port):
        return {"search.example.com": ["10.1.2.3"], "split.example.com": ["8.8.8.8", "10.9.9.9"]}[
            host
        ]

    with pytest.raises(OutboundRefused) as refused:
        outbound.check_url("https://search.example.com/", resolver=resolver)
    assert str(refused.value).startswith("search.example.com (10.1.2.3):443 is a private address")
    assert (refused.value.host, refused.value.address) == ("search.example.com", "10.1.2.3")
    # A name with one public and one private address is refused whole.
    with pytest.raises(OutboundRefused, match=r"10\.9\.9\.9"):
        outbound.check_url("https://split.example.com/", resolver=resolver)


def test_a_name_that_does_not_resolve_is_said_so():
    with pytest.raises(HostNotFound, match=r"nowhere\.invalid"):
        outbound.check_url("http://nowhere.invalid/")


def test_the_client_does_not_connect_to_a_refused_address():
    with (
        serving(ok) as server,
        outbound.client(timeout=5) as client,
        pytest.raises(OutboundRefused, match="loopback"),
    ):
        client.get(server.url())
    assert server.requests == []


def test_the_operator_allows_a_host_and_port_and_nothing_beside_it(settings):
    with serving(ok) as allowed, serving(ok) as other, outbound.client(timeout=5) as client:
        settings.OUTBOUND_ALLOW = [f"127.0.0.1:{allowed.port}"]
        assert client.get(allowed.url()).json() == {"ok": True}
        with pytest.raises(OutboundRefused):
            client.get(other.url())
        settings.OUTBOUND_ALLOW = ["127.0.0.0/8"]
        assert client.get(other.url()).status_code == 200
    assert len(allowed.requests) == len(other.requests) == 1


def test_allow_entries_are_read_or_refused_with_the_entry_named():
    hosts = outbound.parse_allow(["ollama", "Model.Internal:8080", "[::1]:11434", "10.0.0.0/8"])
    assert [entry.host for entry in hosts[:2]] == ["ollama", "model.internal"]
    assert hosts[1].port == 8080 and hosts[2].port == 11434
    assert hosts[3].network == ipaddress.ip_network("10.0.0.0/8")
    with pytest.raises(ValueError, match="'ollama:99999'"):
        outbound.parse_allow(["ollama:99999"])
    with pytest.raises(ValueError, match="'a b'"):
        outbound.parse_allow(["a b"])


def test_the_client_connects_to_the_address_it_checked_not_a_second_lookup(settings):
    """DNS rebinding: the name answers a public address when checked, then a loopback
    one. The transport resolves once per connection, checks and connects to that
    address, so the loopback answer is refused and the server never hears from it."""
    answers = iter([["8.8.8.8"], ["127.0.0.1"], ["127.0.0.1"]])

    def rebinding(host, port):
        return next(answers)

    with serving(ok) as server:
        assert outbound.check_url(server.url(host="rebind.test"), resolver=rebinding)
        with (
            outbound.client(timeout=5, resolver=rebinding) as client,
            pytest.raises(OutboundRefused, match=r"rebind\.test \(127\.0\.0\.1\)"),
        ):
            client.get(server.url(host="rebind.test"))
    assert server.requests == []

    # Allowed, the name reaches the address the resolver gave (the system's resolver
    # knows no "model.test"), and the request still names its host.
    settings.OUTBOUND_ALLOW = ["127.0.0.1"]
    with (
        serving(ok) as server,
        outbound.client(timeout=5, resolver=lambda h, p: ["127.0.0.1"]) as client,
    ):
        assert client.get(server.url(host="model.test")).status_code == 200
    assert server.requests[0]["headers"]["host"] == f"model.test:{server.port}"


def test_every_redirect_is_checked_where_it_connects(settings):
    with serving(ok) as inside:

        def redirect(handler):
            target = handler.path.removeprefix("/to/")
            answer(handler, 302, b"", Location=target)

        with serving(redirect) as first:
            settings.OUTBOUND_ALLOW = [f"127.0.0.1:{first.port}"]
            with outbound.client(timeout=5) as client:
                for target in (inside.url(), "http://169.254.169.254/latest/meta-data/"):
                    with pytest.raises(OutboundRefused):
                        client.get(first.url(f"/to/{target}"))
                # Allowed, the same redirect is followed.
                settings.OUTBOUND_ALLOW.append(f"127.0.0.1:{inside.port}")
                assert client.get(first.url(f"/to/{inside.url()}")).json() == {"ok": True}
    assert len(inside.requests) == 1 and len(first.requests) == 3


def test_a_reply_past_the_cap_is_refused_while_it_streams(settings):
    sent = []

    def endless(handler):
        # No Content-Length: the client only finds out by reading. 64 MB at most.
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        chunk = b"x" * 65536
        try:
            for _ in range(1024):
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent.append(len(chunk))
        except OSError:
            return

    def declared(handler):
        answer(handler, 200, b"y" * 3_000_000)

    with serving(endless) as server, serving(declared) as big:
        settings.OUTBOUND_ALLOW = ["127.0.0.1"]
        with outbound.client(timeout=5, max_body_bytes=1_000_000) as client:
            with pytest.raises(ResponseTooLarge, match="larger than 1,000,000 bytes") as error:
                client.post(server.url(), json={})
            with pytest.raises(ResponseTooLarge):
                client.get(big.url())
        time.sleep(0.5)
    assert outbound.describe_failure(error.value).startswith("refused: the answer from")
    # The client hung up soon after the cap: the server did not get to send it all.
    assert sum(sent) < 32 * 1024 * 1024


def test_a_compressed_reply_is_refused(settings):
    def gzipped(handler):
        answer(handler, 200, b"\x1f\x8b...", Content_Encoding="gzip")

    settings.OUTBOUND_ALLOW = ["127.0.0.1"]
    with (
        serving(gzipped) as server,
        outbound.client(timeout=5) as client,
        pytest.raises(OutboundRefused, match="compressed"),
    ):
        client.get(server.url())
    assert server.requests[0]["headers"]["accept-encoding"] == "identity"


def test_failures_are_described_without_the_remote_body(settings):
    def failing(handler):
        if handler.path == "/slow":
            time.sleep(1.5)
        answer(handler, 500, b'{"error": "SECRET-INTERNAL-DETAIL at /srv/app.py"}')

    settings.OUTBOUND_ALLOW = ["127.0.0.1"]
    with serving(failing) as server, outbound.client(timeout=0.5) as client:
        response = client.get(server.url("/boom"))
        with pytest.raises(Exception) as status:
            response.raise_for_status()
        with pytest.raises(Exception) as slow:
            client.get(server.url("/slow"))
        closed = server.port  # Closed once the server stops below.
    with outbound.client(timeout=2) as client, pytest.raises(Exception) as refused_port:
        client.get(f"http://127.0.0.1:{closed}/")
    described = [outbound.describe_failure(e.value) for e in (status, slow, refused_port)]
    assert described == [
        "the server answered HTTP 500 (Internal Server Error)",
        "timed out: the server did not answer in time",
        "could not connect to the server (refused or unreachable)",
    ]
    assert not any("SECRET" in text for text in described)


def _certificate(name: str):
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = certificate.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return pem, key_pem


def test_tls_verifies_the_host_name_though_the_connection_goes_to_an_address(settings, tmp_path):
    pem, key_pem = _certificate("model.test")
    (tmp_path / "cert.pem").write_bytes(pem)
    (tmp_path / "key.pem").write_bytes(key_pem)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    trusting = ssl.create_default_context(cadata=pem.decode())
    settings.OUTBOUND_ALLOW = ["127.0.0.1"]
    local = {"model.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]}
    with (
        serving(ok, tls=server_context) as server,
        outbound.client(timeout=5, verify=trusting, resolver=lambda h, p: local[h]) as c,
    ):
        assert c.get(server.url(host="model.test", scheme="https")).json() == {"ok": True}
        with pytest.raises(Exception) as mismatch:
            c.get(server.url(host="other.test", scheme="https"))
    assert outbound.describe_failure(mismatch.value).startswith("the TLS connection failed")
    assert len(server.requests) == 1


def test_a_malformed_allow_list_stops_the_app_at_start():
    environment = production_environment(
        DATABASE_URL="postgres://u@h/n", OUTBOUND_ALLOW="127.0.0.1:11434,model server"
    )
    done = settings_import(environment)
    assert done.returncode != 0
    assert "OUTBOUND_ALLOW: 'model server' is not a host name" in done.stderr
