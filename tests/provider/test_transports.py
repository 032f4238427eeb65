"""The SDK client's transports (provider/transports.py) against the loopback server: TLS only where it is used.

A missing CA file in SSL_CERT_FILE makes building a verified SSL context fail (httpx2 reads that variable
when it builds one), so whether a request built one is seen from outside, through the real SDK client.
"""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent_eval import llm
from agent_eval.errors import ProviderError
from tests.loopback import status, text

BODY = {"model": "m-test", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def no_ca_file(monkeypatch, tmp_path: Path) -> Path:
    missing = tmp_path / "no-such-ca.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(missing))
    return missing


def test_a_client_of_an_http_url_builds_no_ssl_context(loopback, no_ca_file) -> None:
    srv = loopback([text("one"), text("two")])
    for expected in ("one", "two"):  # a new event loop each time: a new client each time
        answer = asyncio.run(llm.complete(srv.base_url, "k", BODY))
        assert answer.content == expected
    assert srv.count == 2


def test_a_redirect_to_https_gets_a_verified_ssl_context(loopback, no_ca_file) -> None:
    target = "https://127.0.0.1:9/v1/chat/completions"
    srv = loopback([status(307, {}, {"location": target})])
    with pytest.raises(ProviderError) as caught:
        asyncio.run(llm.complete(srv.base_url, "k", BODY))
    assert srv.count == 1  # the redirect was answered; the https:// request never left
    chain, link = [], caught.value.__cause__ or caught.value.__context__
    while link is not None:
        chain.append(link)
        link = link.__cause__ or link.__context__
    assert any(isinstance(error, FileNotFoundError) for error in chain), chain  # it read the CA file


def test_a_client_of_an_https_url_builds_its_verified_context_when_it_is_made(no_ca_file) -> None:
    async def make() -> None:
        await llm.shared_client("https://127.0.0.1:9/v1", "k")

    with pytest.raises(FileNotFoundError):
        asyncio.run(make())


def test_a_proxy_the_url_bypasses_builds_no_ssl_context(loopback, no_ca_file, monkeypatch) -> None:
    # A proxy for every scheme in the environment, and NO_PROXY naming the loopback host (a local endpoint
    # in a CI with a proxy): the client of its http:// URL reads no CA file, as it does without the proxy.
    srv = loopback([text("direct")])
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert asyncio.run(llm.complete(srv.base_url, "k", BODY)).content == "direct"
    assert srv.count == 1


def test_an_https_request_through_a_proxy_gets_a_verified_ssl_context(no_ca_file, monkeypatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    with pytest.raises((ProviderError, FileNotFoundError)) as caught:
        asyncio.run(llm.complete("https://127.0.0.1:9/v1", "k", BODY))
    chain, link = [caught.value], caught.value.__cause__ or caught.value.__context__
    while link is not None:
        chain.append(link)
        link = link.__cause__ or link.__context__
    assert any(isinstance(error, FileNotFoundError) for error in chain), chain  # it read the CA file


def test_a_request_the_proxy_serves_goes_through_it(loopback, monkeypatch) -> None:
    srv = loopback([text("via the proxy")])  # a proxy is sent the whole URL; the loopback answers it
    monkeypatch.setenv("HTTP_PROXY", srv.base_url.rsplit("/v1", 1)[0])
    assert asyncio.run(llm.complete("http://upstream.invalid/v1", "k", BODY)).content == "via the proxy"
    assert srv.count == 1
